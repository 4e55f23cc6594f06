"""Step-time analysis: runs, step-time terms, stragglers and the limit each run hit.

Turns StepMetric evidence into per-run statistics (medians over steady steps),
the terms of T_step ~ max(T_compute, T_comm) + T_input + T_sync, the share of
time waiting for data, stragglers, and the runbook's better first move. The batch
contract and efficiency across runs live in ``diagnose.analyzers.contract``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from diagnose.evidence import Provenance, ScalingFact, StackSample, StepMetric

INPUT_SHARE = 0.3      # data wait share above which a run is input-bound
SYNC_SHARE = 0.2       # host-device sync share above which syncs are the limit
COMM_SHARE = 0.3       # exposed communication share that limits scaling
STRAGGLER = 1.25       # busy time over the rank median that marks a straggler
STALL_STEPS = 10       # a rank this many steps behind the others' last step ...
STALL_SHARE = 0.8      # ... and below this share of it stopped progressing
LOSS_POINTS = 8        # loss values a run needs before its curve is judged
LOSS_GIVE_BACK = 0.25  # a rise counts when it gives back at least this share of what the loss had fallen
TERMS = ("input", "comm", "compute", "sync")
_FIELD = {"input": "data_time", "comm": "comm_time", "compute": "compute_time", "sync": "sync_time"}


@dataclass
class RunStats:
    """One run (a label and a world size) and its steady-state medians."""

    run: str
    world_size: int | None
    records: list[StepMetric] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)
    ranks: dict[int, dict[str, float]] = field(default_factory=dict)
    distributed: bool | None = None

    @property
    def source(self) -> Provenance:
        return self.records[0].provenance

    def get(self, key: str) -> float | None:
        return self.values.get(key)


def group_runs(metrics: Sequence[StepMetric]) -> list[RunStats]:
    """Split metrics into runs: by run label, then by world size when a label holds several."""
    by_label: dict[str, list[StepMetric]] = defaultdict(list)
    for m in metrics:
        by_label[m.run or m.provenance.source or "run"].append(m)
    runs: list[RunStats] = []
    for label, items in by_label.items():
        sizes = sorted({m.world_size for m in items if m.world_size is not None})
        groups: dict[int | None, RunStats] = {s: RunStats(label, s) for s in sizes} or {None: RunStats(label, None)}
        current = sizes[0] if sizes else None
        for m in sorted(items, key=lambda m: m.provenance.line or 0):
            if m.world_size is not None:
                current = m.world_size
            target = m.world_size if m.world_size is not None else current
            groups[target].records.append(m)
        for stats in groups.values():
            _fill(stats)
            runs.append(stats)
    return runs


def _steady(records: list[StepMetric]) -> list[StepMetric]:
    timed = [m for m in records if m.step_time is not None or m.data_time is not None]
    later = [m for m in timed if m.step != 0]
    timed = later or timed
    return timed[1:] if len(timed) >= 3 else timed


def _med(records: list[StepMetric], key: str) -> float | None:
    vals = [getattr(m, key) for m in records if getattr(m, key) is not None]
    return float(median(vals)) if vals else None


def _fill(stats: RunStats) -> None:
    recs = stats.records
    steady = _steady(recs)
    for key in ("step_time", "data_time", "comm_time", "compute_time", "sync_time", "throughput"):
        val = _med(steady, key) if any(getattr(m, key) is not None for m in steady) else _med(recs, key)
        if val is not None:
            stats.values[key] = val
    for key in ("epoch_time", "local_batch", "accumulation", "steps_per_epoch"):
        val = _med(recs, key)
        if val is not None:
            stats.values[key] = val
    stats.values["warmup_only"] = float(bool(recs) and all(m.step == 0 for m in recs if m.step_time or m.data_time)
                                        and any(m.step_time or m.data_time for m in recs))
    seen = {m.rank for m in recs if m.rank is not None}
    if stats.world_size is None and len(seen) > 1 and seen == set(range(len(seen))):
        stats.world_size = len(seen)  # ranks 0..N-1 each logged their steps: at least N ranks
    flags = {m.distributed for m in recs if m.distributed is not None}
    stats.distributed = (stats.world_size or 0) > 1 or (True in flags) or (None if not flags else False)
    for rank in sorted({m.rank for m in steady if m.rank is not None}):
        mine = [m for m in steady if m.rank == rank]
        stats.ranks[rank] = {k: v for k in ("step_time", "comm_time", "data_time", "compute_time")
                             if (v := _med(mine, k)) is not None}


def terms_of(stats: RunStats) -> dict[str, float]:
    """The known step-time terms of a run, in seconds per step."""
    return {t: stats.values[_FIELD[t]] for t in TERMS if _FIELD[t] in stats.values}


def step_of(stats: RunStats) -> float | None:
    """Measured step time, or the model's estimate from the terms."""
    st = stats.get("step_time")
    terms = terms_of(stats)
    if st is None and ("compute" in terms or "comm" in terms):
        st = max(terms.get("compute", 0.0), terms.get("comm", 0.0)) + terms.get("input", 0.0) + terms.get("sync", 0.0)
    if st is not None and terms.get("input", 0.0) > st:  # a log whose step time excludes the data wait
        st += terms["input"]
    return st


def limit_of(stats: RunStats, eta: float | None = None) -> str | None:
    """Which term limits the run: input, comm, sync or compute (None when unknown)."""
    terms, st = terms_of(stats), step_of(stats)
    if not terms or not st:
        return None
    share = {t: v / st for t, v in terms.items()}
    if share.get("input", 0.0) >= INPUT_SHARE and terms["input"] >= max(terms.values()) * 0.999:
        return "input"
    if share.get("input", 0.0) >= 0.5:
        return "input"
    if share.get("sync", 0.0) >= SYNC_SHARE:
        return "sync"
    if "comm" in terms and (terms["comm"] >= terms.get("compute", float("inf"))
                            or (share["comm"] >= COMM_SHARE and (eta is None or eta < 0.8))):
        return "comm"
    if "compute" in terms:
        return "compute"
    return None


def stragglers(stats: RunStats) -> list[int]:
    """Ranks whose busy time (step minus communication wait) stands out from the others."""
    busy = {r: v["step_time"] - v.get("comm_time", 0.0) for r, v in stats.ranks.items() if "step_time" in v}
    if len(busy) < 2:
        return []
    mid = median(busy.values())
    return [r for r, b in busy.items() if mid > 0 and b > STRAGGLER * mid and b - mid > 0.005]


def stalled_ranks(stats: RunStats) -> list[tuple[int, int, int]]:
    """(rank, its last step, the others' median last step) for ranks far behind the others of a run."""
    last: dict[int, int] = {}
    for m in stats.records:
        if m.rank is not None and m.step is not None:
            last[m.rank] = max(last.get(m.rank, m.step), m.step)
    if len(last) < 2:
        return []
    out = []
    for rank, step in last.items():
        others = [s for r, s in last.items() if r != rank]
        mid = int(median(others))
        if mid - step >= STALL_STEPS and step < STALL_SHARE * mid:
            out.append((rank, step, mid))
    return out


@dataclass(frozen=True)
class LossRise:
    """A run whose (smoothed) loss fell to ``low`` and then ended at ``end``, ``ratio`` times higher."""

    low: float
    end: float
    ratio: float
    low_at: StepMetric
    end_at: StepMetric


def loss_rise(stats: RunStats) -> LossRise | None:
    """How far a run's loss rose again after its lowest point, judged on rolling medians (one spike is not a rise):
    None unless the curve has LOSS_POINTS finite positive values, ends at least twice its low and gave back at least
    LOSS_GIVE_BACK of what it had fallen (a loss near zero that wobbles is not a rise)."""
    ranks = sorted({m.rank for m in stats.records if m.loss is not None}, key=lambda r: (r is not None, r or 0))
    recs = [m for m in stats.records if m.loss is not None and m.rank == (ranks[0] if ranks else None)
            and math.isfinite(m.loss)]
    if len(recs) < LOSS_POINTS or any(m.loss <= 0 for m in recs):  # log-likelihoods, GAN terms: not a plain loss
        return None
    width = max(3, min(25, len(recs) // 10))
    smooth = [median(m.loss for m in recs[i:i + width]) for i in range(len(recs) - width + 1)]
    low_i = min(range(len(smooth) - 1), key=smooth.__getitem__)
    low, end, first = smooth[low_i], smooth[-1], smooth[0]
    if end < 2 * low or end - low < LOSS_GIVE_BACK * (first - low):
        return None
    return LossRise(low, end, end / low, recs[low_i + width // 2], recs[-1])


@dataclass(frozen=True)
class LossNotFinite:
    """A run whose logged loss became NaN or Inf: the first such record, and the last finite one before it."""

    first: StepMetric
    last_finite: StepMetric | None
    count: int


def loss_not_finite(stats: RunStats) -> LossNotFinite | None:
    """The first non-finite loss of a run (NaN or Inf), if its progress lines logged one."""
    recs = [m for m in stats.records if m.loss is not None]
    bad = [m for m in recs if not math.isfinite(m.loss)]
    if not bad:
        return None
    before = [m for m in recs if math.isfinite(m.loss) and (m.provenance.line or 0) < (bad[0].provenance.line or 0)]
    return LossNotFinite(bad[0], before[-1] if before else None, len(bad))


def identical_batches(metrics: Sequence[StepMetric]) -> list[tuple[str, list[StepMetric]]]:
    """Per run, the batches that every printing rank saw identically (a sampler that does not shard)."""
    by_run: dict[str, dict[int, list[StepMetric]]] = defaultdict(lambda: defaultdict(list))
    for m in metrics:
        if m.batch is not None and m.rank is not None:
            by_run[m.run or ""][m.rank].append(m)
    out = []
    for run, ranks in by_run.items():
        if len(ranks) < 2:
            continue
        same = [ms for ms in zip(*ranks.values(), strict=False) if len({m.batch for m in ms}) == 1]
        if same:
            out.append((run, [m for ms in same for m in ms]))
    return out


def stack_data_share(evidence: Sequence[Any]) -> dict[int, tuple[float, int]]:
    """Per rank, the share of live stack samples in data loading, and the sample count."""
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for ev in evidence:
        if isinstance(ev, StackSample) and ev.rank is not None:
            counts[ev.rank][1] += 1
            counts[ev.rank][0] += ev.activity == "data_loading"
    return {r: (hit / n, n) for r, (hit, n) in counts.items() if n >= 2}


def fact(name: str, value: Any, stats: RunStats | None = None, text: str = "", *,
         rank: int | None = None, source: StepMetric | None = None) -> ScalingFact:
    """A ScalingFact citing the first record of ``stats`` (or ``source``)."""
    ref = source or (stats.records[0] if stats and stats.records else None)
    return ScalingFact(name=name, value=value, run=stats.run if stats else (ref.run if ref else None),
                       world_size=stats.world_size if stats else None, rank=rank,
                       provenance=ref.provenance if ref else Provenance(probe="steptime"), text=text or None)
