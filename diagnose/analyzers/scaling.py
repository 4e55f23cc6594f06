"""The scaling analysis: StepMetric evidence in, a summary for ``report.scaling`` and facts for rules out.

Facts (ScalingFact ``name``): ``data_wait_share``, ``comm_share``, ``compute_share``,
``sync_share``, ``comm_compute_ratio``, ``limit`` (input|comm|sync|compute),
``warmup_only``, ``eta``, ``eta_per_sample``, ``eta_effective`` (what rules judge), ``speedup``, ``epoch_speedup``, ``steps_per_epoch_ratio``,
``b_eff_ratio``, ``lr_not_adjusted``, ``same_steps_per_epoch_ddp``,
``identical_rank_batches``, ``straggler``, ``rank_stalled``, ``slowdown_same_workload``,
``step_time_only``, ``step_time_ms``, ``local_batch``, ``loss_rise`` (end over low of the smoothed loss),
``loss_not_finite`` (how many logged losses were NaN/Inf).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from diagnose.analyzers import contract as ct
from diagnose.analyzers.steptime import (
    RunStats,
    fact,
    group_runs,
    identical_batches,
    limit_of,
    loss_not_finite,
    loss_rise,
    stack_data_share,
    stalled_ranks,
    step_of,
    stragglers,
    terms_of,
)
from diagnose.evidence import ScalingFact, StepMetric
from diagnose.probes.steptime.spec import steptime_spec

SLOWDOWN = 3.0   # same workload this many times slower: worth a look at the input pipeline

__all__ = ["ScalingAnalysis", "analyze_scaling"]


@dataclass
class ScalingAnalysis:
    """The plain summary (for ``report.scaling``) and the derived facts (for rules)."""

    summary: dict[str, Any] = field(default_factory=dict)
    facts: list[ScalingFact] = field(default_factory=list)


def analyze_scaling(evidence: Sequence[Any]) -> ScalingAnalysis:
    """Analyze every StepMetric (and live stack samples) in ``evidence``."""
    metrics = [e for e in evidence if isinstance(e, StepMetric)]
    runs = group_runs(metrics)
    comparisons = ct.compare(runs)
    eta_of = {id(c.other): c.eta_per_sample if c.eta_per_sample is not None else c.eta for c in comparisons}
    out = ScalingAnalysis()
    run_rows = [_run(r, eta_of.get(id(r)), out.facts) for r in runs if r.records]
    eff_rows = [_comparison(c, out.facts) for c in comparisons]
    _batches(metrics, out.facts)
    _slowdown(runs, out.facts)
    for rank, (share, n) in sorted(stack_data_share(evidence).items()):
        out.facts.append(fact("data_wait_share", round(share, 3), None,
                              f"rank {rank}: {share:.0%} of {n} live stack samples in data loading", rank=rank))
    limits = [row for row in run_rows if row.get("limit")]
    worst = max(limits, key=lambda row: (row["limit"] == "input", row.get("data_wait_share") or 0), default=None)
    moves = steptime_spec().moves
    out.summary = {
        "runs": run_rows,
        "efficiency": eff_rows,
        "data_wait_share": max((row["data_wait_share"] for row in run_rows
                                if row.get("data_wait_share") is not None), default=None),
        "limit": worst["limit"] if worst else None,
        "move": dict(moves.get(worst["limit"], {})) if worst else None,
        "flags": [f.text for f in out.facts if f.name in ("lr_not_adjusted", "same_steps_per_epoch_ddp",
                                                           "identical_rank_batches", "straggler") and f.text],
    }
    return out


def _run(stats: RunStats, eta: float | None, facts: list[ScalingFact]) -> dict[str, Any]:
    terms, st = terms_of(stats), step_of(stats)
    limit = limit_of(stats, eta)
    row: dict[str, Any] = {"run": stats.run, "world_size": stats.world_size, "distributed": stats.distributed,
                           "b_eff": ct.b_eff(stats), "steps_per_epoch": ct.steps_per_epoch(stats),
                           "step_time": st, "epoch_time": stats.get("epoch_time"),
                           "terms": {k: round(v, 6) for k, v in terms.items()}, "limit": limit,
                           "ranks": sorted(stats.ranks), "stragglers": stragglers(stats)}
    for key in ("local_batch", "accumulation", "throughput"):
        row[key] = stats.get(key)
    warm = bool(stats.get("warmup_only"))
    if st:
        row["shares"] = {k: round(v / st, 4) for k, v in terms.items()}
        names = {"input": "data_wait_share", "comm": "comm_share", "compute": "compute_share", "sync": "sync_share"}
        for term, share in row["shares"].items():
            facts.append(fact(names[term], share, stats, f"{term} {terms[term] * 1e3:.2f} ms of a "
                              f"{st * 1e3:.2f} ms step ({share:.0%}) in {stats.run}"))
        row["data_wait_share"] = row["shares"].get("input")
        facts.append(fact("step_time_ms", round(st * 1e3, 3), stats, f"step time {st * 1e3:.2f} ms in {stats.run}"))
        if not terms:
            facts.append(fact("step_time_only", True, stats, f"{stats.run}: step time without a breakdown"))
    if "comm" in terms and terms.get("compute"):
        ratio = terms["comm"] / terms["compute"]
        facts.append(fact("comm_compute_ratio", round(ratio, 3), stats,
                          f"communication {terms['comm'] * 1e3:.2f} ms vs compute {terms['compute'] * 1e3:.2f} ms"))
    if limit:
        facts.append(fact("limit", limit, stats, f"{stats.run}: the step is {limit}-bound"
                          + (f" ({', '.join(f'{k} {v * 1e3:.1f} ms' for k, v in terms.items())})" if terms else "")))
    if warm:
        facts.append(fact("warmup_only", True, stats, f"{stats.run}: only the first step is timed"))
    if stats.get("local_batch"):
        facts.append(fact("local_batch", int(stats.values["local_batch"]), stats, f"local batch {stats.values['local_batch']:g}"))
    if rise := loss_rise(stats):
        facts.append(fact("loss_rise", round(rise.ratio, 2), stats, f"{stats.run}: the loss fell to {rise.low:.4g} "
                          f"(line {rise.low_at.provenance.line}) and rose again to {rise.end:.4g} by line "
                          f"{rise.end_at.provenance.line} ({rise.ratio:.1f}x its low)", source=rise.end_at))
    if bad := loss_not_finite(stats):
        where = f"step {bad.first.step}" if bad.first.step is not None else f"line {bad.first.provenance.line}"
        after = (f" after {bad.last_finite.loss:.4g} at line {bad.last_finite.provenance.line}"
                 if bad.last_finite is not None else "")
        facts.append(fact("loss_not_finite", bad.count, stats, f"{stats.run}: the logged loss became {bad.first.loss} "
                          f"at {where}{after} ({bad.count} non-finite value(s))", source=bad.first))
    for rank, step, mid in stalled_ranks(stats):
        facts.append(fact("rank_stalled", rank, stats, f"rank {rank} logged its last step at {step} while the other "
                          f"ranks of {stats.run} went on to step {mid}", rank=rank))
    for rank in row["stragglers"]:
        facts.append(fact("straggler", rank, stats, f"rank {rank} is busy longer than the other ranks of {stats.run}",
                          rank=rank))
    return row


def _comparison(cmp: ct.Comparison, facts: list[ScalingFact]) -> dict[str, Any]:
    other, base = cmp.other, cmp.base
    row = {"world_size": other.world_size, "run": other.run, "baseline": base.run, "basis": cmp.basis,
           "speedup": cmp.speedup, "eta": cmp.eta, "eta_per_sample": cmp.eta_per_sample,
           "t1": cmp.t1, "tn": cmp.tn, "steps_per_epoch_ratio": cmp.steps_ratio,
           "lr_ratio": cmp.lr_ratio, "b_eff_ratio": cmp.b_eff_ratio, "changed": list(cmp.changed)}
    where = f"{other.run} vs {base.run}"
    if cmp.eta is not None and cmp.t1 and cmp.tn:
        unit = "step" if cmp.basis == "step_time" else "epoch"
        facts.append(fact("eta", round(cmp.eta, 4), other,
                          f"eta = T1/(N*TN) = {cmp.t1:.4g} s/({other.world_size} x {cmp.tn:.4g} s) per {unit} "
                          f"= {cmp.eta:.1%} at N={other.world_size} ({where})"))
    effective = cmp.eta_per_sample if cmp.eta_per_sample is not None else cmp.eta
    if effective is not None:
        kind = "per sample (B_eff grew with N)" if cmp.eta_per_sample is not None else "T1/(N*TN)"
        facts.append(fact("eta_effective", round(effective, 4), other,
                          f"efficiency {kind} {effective:.1%} at N={other.world_size} ({where})"))
    if cmp.eta_per_sample is not None:
        be1, ben = ct.b_eff(base), ct.b_eff(other)
        how = (f"(B_N/TN)/(N*B_1/T1), B_eff {be1:g} -> {ben:g}" if be1 and ben else
               f"throughput {other.get('throughput'):g}/({other.world_size} x {base.get('throughput'):g})")
        facts.append(fact("eta_per_sample", round(cmp.eta_per_sample, 4), other,
                          f"per-sample efficiency {how} = {cmp.eta_per_sample:.1%} ({where})"))
    if cmp.speedup is not None:
        name = "epoch_speedup" if cmp.basis == "epoch_time" else "speedup"
        facts.append(fact(name, round(cmp.speedup, 4), other, f"{cmp.basis} speed-up {cmp.speedup:.2f}x ({where})"))
    if cmp.steps_ratio is not None:
        facts.append(fact("steps_per_epoch_ratio", round(cmp.steps_ratio, 3), other,
                          f"steps per epoch {ct.steps_per_epoch(base):g} -> {ct.steps_per_epoch(other):g} ({where})"))
    if cmp.b_eff_ratio is not None and abs(cmp.b_eff_ratio - 1) > ct.SAME:
        facts.append(fact("b_eff_ratio", round(cmp.b_eff_ratio, 3), other,
                          f"B_eff changed {cmp.b_eff_ratio:.3g}x ({', '.join(cmp.changed)} changed; {where})"))
    why = ct.lr_not_adjusted(cmp)
    if why:
        facts.append(fact("lr_not_adjusted", True, other, f"{why} ({where})"))
    if ct.same_steps_with_ddp(cmp):
        facts.append(fact("same_steps_per_epoch_ddp", True, other,
                          f"as many steps per epoch with several ranks as without ({where}): the data is not sharded"))
    return row


def _batches(metrics: list[StepMetric], facts: list[ScalingFact]) -> None:
    for run, same in identical_batches(metrics):
        ranks = sorted({m.rank for m in same if m.rank is not None})
        facts.append(fact("identical_rank_batches", len(same) // max(len(ranks), 1), None,
                          f"ranks {ranks} printed identical batches ({same[0].batch}) in {run}", source=same[0]))


def _slowdown(runs: list[RunStats], facts: list[ScalingFact]) -> None:
    plain = [r for r in runs if r.get("step_time") and ct.steps_per_epoch(r) and not terms_of(r)]
    for slow in plain:
        for fast in plain:
            same = abs(ct.steps_per_epoch(slow) - ct.steps_per_epoch(fast)) <= 0.05 * ct.steps_per_epoch(fast)
            ratio = slow.values["step_time"] / fast.values["step_time"]
            if slow is not fast and same and slow.world_size == fast.world_size and ratio >= SLOWDOWN:
                facts.append(fact("slowdown_same_workload", round(ratio, 2), slow,
                                  f"{slow.run}: {ratio:.1f}x slower per step than {fast.run} on the same number of "
                                  f"steps per epoch"))
