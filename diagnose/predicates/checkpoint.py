"""Predicates over checkpoint evidence (`checkpoint_content`), registered with the rest by name."""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate

_BINDS = ("states", "format", "path", "world_size", "issues", "detail")


def _fields(item: object, **extra: object) -> dict[str, object]:
    return {
        "format": getattr(item, "format", "?"),
        "path": getattr(item.provenance, "source", None) or "the checkpoint",  # type: ignore[attr-defined]
        "world_size": getattr(item, "world_size", None) or "?",
        "detail": getattr(item, "text", None) or "",
        **extra,
    }


@predicate(binds=_BINDS, kinds=("checkpoint_content",))
def checkpoint_lacks(ctx: Context, states: Sequence[str]) -> Binding | None:
    """A checkpoint lacks at least one of the named states (model, optimizer, scheduler, scaler, rng, sampler, step, sharding)."""
    hits = [(c, [s for s in states if s in c.missing]) for c in ctx.of("checkpoint_content")]
    hits = [(c, lacked) for c, lacked in hits if lacked]
    if not hits:
        return None
    # Name the checkpoint that lacks the most important state (states are listed most important first),
    # with what that one lacks: when two are compared, the message must blame the right file.
    hits.sort(key=lambda hit: tuple(s not in hit[1] for s in states))
    first, lacked = hits[0]
    return Binding(frozenset(), tuple(c for c, _ in hits), _fields(first, states=", ".join(lacked), count=len(hits)))


@predicate(binds=_BINDS, kinds=("checkpoint_content",))
def checkpoint_has_issue(ctx: Context, issues: Sequence[str]) -> Binding | None:
    """A checkpoint shows one of the named problem codes (missing_shard, stray_shard, torn_step, key_mismatch, ...)."""
    hits = [c for c in ctx.of("checkpoint_content") if set(c.issues) & set(issues)]
    if not hits:
        return None
    found = ", ".join(dict.fromkeys(i for c in hits for i in c.issues if i in issues))
    return Binding(frozenset(), tuple(hits), _fields(hits[0], issues=found, count=len(hits)))


@predicate(binds=_BINDS + ("run_world_size",), kinds=("checkpoint_content", "rank_env", "process_group"))
def checkpoint_world_size_differs(ctx: Context) -> Binding | None:
    """A sharded checkpoint was written by a world size other than the run's (WORLD_SIZE, process group)."""
    run = ctx.world_size_hint()
    if not run:
        return None
    hits = [c for c in ctx.of("checkpoint_content") if c.world_size and c.world_size != run]
    if not hits:
        return None
    return Binding(frozenset(), tuple(hits), _fields(hits[0], run_world_size=run, count=len(hits)))
