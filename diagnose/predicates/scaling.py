"""Predicates over the scaling analyzer's derived facts (ScalingFact evidence)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate


def _matches(value: Any, at_least: float | None, below: float | None, equals: Any) -> bool:
    if equals is not None:
        return value == equals or str(value) == str(equals)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return at_least is None and below is None and bool(value)
    return (at_least is None or value >= at_least) and (below is None or value < below)


@predicate(binds=("value", "detail", "run"), kinds=("scaling_fact",))
def scaling_fact(ctx: Context, name: str, at_least: float | None = None, below: float | None = None,
                 equals: Any = None) -> Binding | None:
    """A derived scaling fact ``name`` holds: its value is >= at_least and < below, equals a value, or is true."""
    hits = [f for f in ctx.of("scaling_fact") if f.name == name and _matches(f.value, at_least, below, equals)]
    if not hits:
        return None
    best = max(hits, key=lambda f: f.value if isinstance(f.value, (int, float)) else 0)
    ranks = frozenset(f.rank for f in hits if f.rank is not None and name in ("straggler", "rank_stalled"))
    return Binding(ranks, tuple(hits[:10]), {"value": best.value, "detail": best.text or name, "run": best.run})


@predicate(binds=("value", "detail", "run"), kinds=("scaling_fact",))
def scaling_fact_any(ctx: Context, names: Sequence[str]) -> Binding | None:
    """Any of the named scaling facts is present (whatever its value)."""
    hits = [f for f in ctx.of("scaling_fact") if f.name in names]
    if not hits:
        return None
    return Binding(frozenset(), tuple(hits[:10]), {"value": hits[0].value, "detail": hits[0].text or hits[0].name,
                                                   "run": hits[0].run})
