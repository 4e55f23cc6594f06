"""The scaling analyzer on hand-built evidence: batch contract, eta, LR schedule, sampler, stragglers."""

from __future__ import annotations

import pytest

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.evidence import Provenance, StackSample, StepMetric


def _m(run: str, line: int = 1, **kw) -> StepMetric:
    return StepMetric(run=run, provenance=Provenance(probe="test", source=run, line=line), **kw)


def _facts(evidence) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in analyze_scaling(evidence).facts:
        out.setdefault(f.name, []).append(f)
    return out


def test_steps_per_epoch_shrink_with_step_based_warmup_flags_lr_not_adjusted() -> None:
    one = [_m("1gpu", e, epoch=e, step=1000 * e, lr=1e-4 * e, world_size=1) for e in range(1, 5)]
    four = [_m("4gpu", e, epoch=e, step=250 * e, lr=0.25e-4 * e, world_size=4) for e in range(1, 5)]
    analysis = analyze_scaling(one + four)
    facts = {f.name: f for f in analysis.facts}
    assert facts["steps_per_epoch_ratio"].value == pytest.approx(4.0)
    assert facts["b_eff_ratio"].value == pytest.approx(4.0)
    assert "warmup takes 4.0x more epochs" in facts["lr_not_adjusted"].text
    (row,) = analysis.summary["efficiency"]
    assert {"world_size", "b_eff", "optimizer_steps_per_epoch", "lr_at_same_epoch"} <= set(row["changed"])


def test_b_eff_from_batch_contract_and_constant_lr() -> None:
    base = [_m("a", world_size=1, local_batch=32, accumulation=1, lr=1e-3, epoch=1, step_time=0.1)]
    big = [_m("b", world_size=8, local_batch=32, accumulation=2, lr=1e-3, epoch=1, step_time=0.2)]
    analysis = analyze_scaling(base + big)
    runs = {r["run"]: r for r in analysis.summary["runs"]}
    assert runs["a"]["b_eff"] == 32 and runs["b"]["b_eff"] == 512
    facts = {f.name: f for f in analysis.facts}
    assert facts["b_eff_ratio"].value == pytest.approx(16.0)
    assert "stayed the same" in facts["lr_not_adjusted"].text
    # eta = T1/(N*TN) = 0.1 / (8 * 0.2); per sample: (512 / 0.2) / (8 * 32 / 0.1) = 1.0
    assert facts["eta"].value == pytest.approx(0.0625)
    assert facts["eta_per_sample"].value == pytest.approx(1.0)


def test_same_steps_per_epoch_with_ddp_means_unsharded_data() -> None:
    ev = [_m("single", world_size=1, steps_per_epoch=400, step_time=0.1),
          _m("ddp", world_size=2, steps_per_epoch=400, step_time=0.12)]
    facts = _facts(ev)
    assert "same_steps_per_epoch_ddp" in facts
    assert facts["eta"][0].value == pytest.approx(0.1 / (2 * 0.12), abs=1e-3)


def test_epoch_not_faster_with_ddp() -> None:
    ev = [_m("t:x, no DDP", 1, epoch_time=85.0, world_size=1, distributed=False),
          _m("t:x, yes DDP", 2, epoch_time=112.0, distributed=True),
          _m("t:y, no DDP", 3, epoch_time=115.0, world_size=1, distributed=False),
          _m("t:y, yes DDP", 4, epoch_time=88.0, distributed=True)]
    speedups = {f.run: f.value for f in _facts(ev)["epoch_speedup"]}
    assert speedups == {"t:x, yes DDP": pytest.approx(85 / 112, abs=1e-3), "t:y, yes DDP": pytest.approx(115 / 88, abs=1e-3)}


def test_identical_batches_across_ranks() -> None:
    ev = [_m("log", 1, rank=0, batch="[1, 2]"), _m("log", 2, rank=1, batch="[1, 2]"),
          _m("log", 3, rank=0, batch="[3, 4]"), _m("log", 4, rank=1, batch="[5, 6]")]
    (fact,) = _facts(ev)["identical_rank_batches"]
    assert fact.value == 1 and "[0, 1]" in fact.text


def test_sharded_batches_are_not_flagged() -> None:
    ev = [_m("log", 1, rank=0, batch="[1, 2]"), _m("log", 2, rank=1, batch="[3, 4]")]
    assert "identical_rank_batches" not in _facts(ev)


def test_terms_limit_and_move() -> None:
    ev = [_m("r", step=s, step_time=0.1, data_time=0.06) for s in range(1, 6)]
    analysis = analyze_scaling(ev)
    assert analysis.summary["limit"] == "input"
    assert analysis.summary["move"]["runbook"] == "R.scale.gpu-waits-for-data"
    assert analysis.summary["data_wait_share"] == pytest.approx(0.6)


def test_sync_bound() -> None:
    ev = [_m("r", step=s, step_time=0.1, compute_time=0.05, sync_time=0.04, comm_time=0.0) for s in range(1, 5)]
    assert analyze_scaling(ev).summary["limit"] == "sync"


def test_warmup_only_first_step_is_marked() -> None:
    facts = _facts([_m("r", step=0, step_time=0.3, data_time=0.9)])
    assert facts["warmup_only"][0].value is True


def test_stack_samples_give_data_wait_share_per_rank() -> None:
    ev = [StackSample(rank=1, activity="data_loading", sample=i) for i in range(3)]
    ev += [StackSample(rank=1, activity="backward", sample=3), StackSample(rank=0, activity="collective", sample=0),
           StackSample(rank=0, activity="collective", sample=1)]
    shares = {f.rank: f.value for f in _facts(ev)["data_wait_share"]}
    assert shares == {0: 0.0, 1: 0.75}


def test_no_metrics_no_facts() -> None:
    analysis = analyze_scaling([])
    assert analysis.facts == [] and analysis.summary["limit"] is None


def _curve(values: list[float], run: str = "train.log", **kw) -> list[StepMetric]:
    return [_m(run, i + 1, step=i + 1, loss=v, **kw) for i, v in enumerate(values)]


def test_a_loss_that_falls_then_climbs_back_is_a_rise_from_its_low() -> None:
    values = [2.3 * 0.98 ** i for i in range(60)] + [6.5 + 0.1 * (i % 3) for i in range(40)]
    (rise,) = _facts(_curve(values))["loss_rise"]
    assert rise.value == pytest.approx(6.6 / (2.3 * 0.98 ** 55), rel=0.1)
    assert rise.provenance.line == 100 and "rose again to 6.6" in rise.text


@pytest.mark.parametrize("values", [
    [2.3 * 0.98 ** i for i in range(100)],                               # converging
    [2.3 * 0.98 ** i if i != 50 else 9.0 for i in range(100)],           # one spike, then back on track
    [0.5 * 0.9 ** i for i in range(60)] + [0.0002 + 0.0003 * (i % 2) for i in range(40)],  # wobble near zero
    [-1.0 - i * 0.1 for i in range(50)] + [-0.2] * 20,                   # a log-likelihood, not a loss
    [2.3, 1.0, 7.0],                                                     # too few points to judge
])
def test_no_rise_on_curves_that_did_not_diverge(values: list[float]) -> None:
    assert "loss_rise" not in _facts(_curve(values))


def test_the_rise_is_judged_on_one_rank_of_interleaved_ranks() -> None:
    good = _curve([2.0 - 0.01 * i for i in range(50)], rank=0)
    bad = _curve([2.0 - 0.01 * i if i < 25 else 9.0 for i in range(50)], rank=1)
    assert "loss_rise" not in _facts(good + bad)  # rank 0 (the first) converges; interleaving is not a rise
