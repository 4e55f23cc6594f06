"""Unit tests of the scaling predicates (diagnose/predicates/scaling.py)."""

from __future__ import annotations

from diagnose.context import Context
from diagnose.evidence import Provenance, ScalingFact
from diagnose.predicates import REGISTRY
from diagnose.predicates.scaling import scaling_fact, scaling_fact_any


def _fact(name: str, value, rank: int | None = None, run: str | None = "N=8") -> ScalingFact:
    return ScalingFact(name=name, value=value, rank=rank, run=run, text=f"{name}={value}",
                       provenance=Provenance(probe="scaling", source="steps.log", line=3))


def test_threshold_binds_the_largest_value_and_its_run() -> None:
    ctx = Context([_fact("data_wait_share", 0.2, run="N=1"), _fact("data_wait_share", 0.6, run="N=8")])
    found = scaling_fact(ctx, "data_wait_share", at_least=0.3)
    assert found is not None
    assert found.fields["value"] == 0.6 and found.fields["run"] == "N=8"
    assert [e.value for e in found.evidence] == [0.6]


def test_below_bound_is_exclusive_and_misses_return_none() -> None:
    ctx = Context([_fact("eta", 0.5)])
    assert scaling_fact(ctx, "eta", below=0.5) is None
    assert scaling_fact(ctx, "eta", below=0.51) is not None
    assert scaling_fact(ctx, "speedup", at_least=0.0) is None


def test_labels_compare_by_equality_and_flags_by_truth() -> None:
    ctx = Context([_fact("dominant_term", "comm"), _fact("batch_changed", True), _fact("lr_changed", False)])
    assert scaling_fact(ctx, "dominant_term", equals="comm") is not None
    assert scaling_fact(ctx, "dominant_term", equals="input") is None
    assert scaling_fact(ctx, "batch_changed") is not None
    assert scaling_fact(ctx, "lr_changed") is None


def test_only_a_straggler_fact_names_culprit_ranks() -> None:
    ctx = Context([_fact("straggler", 1.9, rank=5), _fact("eta", 0.4, rank=2)])
    assert scaling_fact(ctx, "straggler", at_least=1.5).ranks == frozenset({5})
    assert scaling_fact(ctx, "eta", below=0.5).ranks == frozenset()


def test_any_of_names_whatever_the_value() -> None:
    ctx = Context([_fact("eta", 0.0)])
    found = scaling_fact_any(ctx, ["speedup", "eta"])
    assert found is not None and found.fields["detail"] == "eta=0.0"
    assert scaling_fact_any(ctx, ["speedup"]) is None


def test_registered_with_what_they_read() -> None:
    assert REGISTRY["scaling_fact"].kinds == frozenset({"scaling_fact"})
    assert {"value", "detail", "run", "ranks", "count"} <= REGISTRY["scaling_fact_any"].binds
