"""Across runs: the batch and step contract (B_eff = N * B_local * A), eta = T1 / (N * TN), epoch times.

Compares every multi-rank run with a single-device baseline (same source first):
which counters changed (world size, local batch, accumulation, B_eff, steps per
epoch, learning rate at the same epoch), whether the LR schedule followed a changed
B_eff, and whether an epoch got faster at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from diagnose.analyzers.steptime import RunStats, step_of
from diagnose.evidence import StepMetric
from diagnose.probes.steptime.spec import strip_labels

SAME = 0.1             # relative difference under which two counters are "the same"


@dataclass
class Comparison:
    """One multi-rank run against its single-device baseline."""

    base: RunStats
    other: RunStats
    basis: str | None = None        # step_time | epoch_time
    speedup: float | None = None
    eta: float | None = None
    eta_per_sample: float | None = None  # (B_N/T_N) / (N * B_1/T_1) when both B_eff are known
    steps_ratio: float | None = None  # baseline steps per epoch / other's
    lr_ratio: float | None = None     # other's LR / baseline's at the same epochs
    b_eff_ratio: float | None = None
    changed: tuple[str, ...] = ()
    t1: float | None = None           # the baseline's time on the basis compared
    tn: float | None = None           # the multi-rank run's time on that basis


def b_eff(stats: RunStats) -> float | None:
    """N * B_local * A when the run states N and B_local (A defaults to 1)."""
    lb = stats.get("local_batch")
    if lb is None or not stats.world_size:
        return None
    return stats.world_size * lb * (stats.get("accumulation") or 1.0)


def steps_per_epoch(stats: RunStats) -> float | None:
    """Reported steps per epoch, or the step counter's growth per epoch."""
    if stats.get("steps_per_epoch"):
        return stats.get("steps_per_epoch")
    marks = sorted({(m.epoch, m.step) for m in stats.records if m.epoch is not None and m.step is not None})
    if len(marks) >= 2:
        diffs = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(marks, marks[1:], strict=False) if b[0] > a[0]]
        return float(median(diffs)) if diffs else None
    if len(marks) == 1 and marks[0][0] == 1:
        return float(marks[0][1])
    return None


def _lr_by_epoch(stats: RunStats) -> dict[int, float]:
    return {m.epoch: m.lr for m in stats.records if m.epoch is not None and m.lr is not None}


def _is_single(stats: RunStats) -> bool:
    return stats.world_size == 1 or stats.distributed is False


def compare(runs: Sequence[RunStats]) -> list[Comparison]:
    """A comparison for every multi-rank run that has a single-device baseline."""
    singles = [r for r in runs if _is_single(r)]
    out = []
    for other in runs:
        if _is_single(other) or not other.distributed or not singles:
            continue
        base = min(singles, key=lambda b: _distance(b, other))
        out.append(_compare(base, other))
    return out


def _distance(base: RunStats, other: RunStats) -> tuple[int, int, int]:
    same_src = base.source.source == other.source.source
    same_stem = strip_labels(base.run) == strip_labels(other.run)
    lines = abs((base.source.line or 0) - (other.source.line or 0))
    return (0 if same_stem else 1, 0 if same_src else 1, lines)


def _compare(base: RunStats, other: RunStats) -> Comparison:
    cmp = Comparison(base, other)
    n = other.world_size
    for basis in ("epoch_time", "step_time"):
        t1 = base.get(basis) if basis == "epoch_time" else step_of(base)
        tn = other.get(basis) if basis == "epoch_time" else step_of(other)
        if t1 and tn:
            cmp.basis, cmp.speedup = basis, t1 / tn
            cmp.eta = t1 / (n * tn) if n else None  # the runbook's eta, as defined: T1 / (N * TN)
            be1, ben = b_eff(base), b_eff(other)
            if basis == "step_time" and be1 and ben and n:
                cmp.eta_per_sample = (ben / tn) / (n * be1 / t1)  # per-sample: counts a grown B_eff
            cmp.t1, cmp.tn = t1, tn
            break
    thr1, thrn = base.get("throughput"), other.get("throughput")
    if cmp.eta_per_sample is None and thr1 and thrn and n and _rates_comparable(base, other):
        cmp.eta_per_sample = thrn / (n * thr1)  # throughput is work per second: the same work on both sides
        if cmp.basis is None:
            cmp.basis, cmp.speedup, cmp.eta = "throughput", thrn / thr1, cmp.eta_per_sample
            cmp.t1, cmp.tn = 1.0 / thr1, 1.0 / thrn
    s1, sn = steps_per_epoch(base), steps_per_epoch(other)
    if s1 and sn:
        cmp.steps_ratio = s1 / sn
    lr1, lrn = _lr_by_epoch(base), _lr_by_epoch(other)
    common = [e for e in lr1 if e in lrn and lr1[e] > 0]
    if common:
        cmp.lr_ratio = float(median(lrn[e] / lr1[e] for e in common))
    be1, ben = b_eff(base), b_eff(other)
    if be1 and ben:
        cmp.b_eff_ratio = ben / be1
    elif cmp.steps_ratio and cmp.steps_ratio > 1 + SAME:
        cmp.b_eff_ratio = cmp.steps_ratio  # same data per epoch in fewer optimizer steps
    cmp.changed = tuple(_changed(base, other, cmp))
    return cmp


def _rates_comparable(base: RunStats, other: RunStats) -> bool:
    """Throughputs from one table (or both stated as totals) compare; a per-rank iteration rate does not."""
    return base.source.source == other.source.source and base.source.probe == other.source.probe == "artifacts"


def _differs(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) > SAME * max(abs(a), abs(b))


def _changed(base: RunStats, other: RunStats, cmp: Comparison) -> list[str]:
    out = []
    if _differs(base.world_size, other.world_size) or (other.distributed and not base.distributed):
        out.append("world_size")
    for key in ("local_batch", "accumulation"):
        if _differs(base.get(key), other.get(key)):
            out.append(key)
    if cmp.b_eff_ratio and abs(cmp.b_eff_ratio - 1) > SAME:
        out.append("b_eff")
    if cmp.steps_ratio and abs(cmp.steps_ratio - 1) > SAME:
        out += ["optimizer_steps_per_epoch", "global_step"]
    if cmp.lr_ratio and abs(cmp.lr_ratio - 1) > SAME:
        out.append("lr_at_same_epoch")
    return out


def lr_not_adjusted(cmp: Comparison) -> str | None:
    """Why the LR schedule did not follow a changed B_eff, or None when it did (or cannot be told)."""
    r = cmp.b_eff_ratio
    if not r or abs(r - 1) <= SAME:
        return None
    if cmp.lr_ratio is None:
        return None
    if cmp.steps_ratio and abs(cmp.lr_ratio * cmp.steps_ratio - 1) < 0.3:
        return (f"the LR schedule counts optimizer steps: with {cmp.steps_ratio:.1f}x fewer steps per epoch the LR at "
                f"the same epoch is {cmp.lr_ratio:.3g}x the baseline's, so warmup takes {cmp.steps_ratio:.1f}x more epochs")
    if abs(cmp.lr_ratio - 1) <= SAME:
        return f"B_eff changed {r:.2g}x but the learning rate stayed the same"
    return None


def same_steps_with_ddp(cmp: Comparison) -> bool:
    """The multi-rank run does as many steps per epoch as the single-device run: the data is not sharded."""
    return bool(cmp.steps_ratio and abs(cmp.steps_ratio - 1) <= SAME
                and cmp.other.get("local_batch") == cmp.base.get("local_batch"))


def batch_records(stats: RunStats) -> list[StepMetric]:
    """Records of a run that state part of the batch contract."""
    return [m for m in stats.records if m.local_batch or m.accumulation or m.world_size or m.steps_per_epoch]
