"""Predicates over live evidence (stack samples, rank status, rank environments): the hang decision table.

Each compares ranks: the waiters are victims, the rank somewhere else is the culprit.
Registered in the same vocabulary as `diagnose.predicates.logs`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from diagnose.analyzers.stacks import RankView, alive, coming, env_conflicts, is_waiting, rank_views
from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate
from diagnose.ranks import format_ranks

_PLACE_FIELDS = ("where", "waiting", "place", "call_site", "frame")


def _views(ctx: Context) -> dict[int, RankView]:
    return rank_views(ctx.of("stack_sample") + ctx.of("rank_status"))


def _cite(views: Sequence[RankView], ctx: Context) -> tuple[Any, ...]:
    """The latest sample (or status) of each rank, culprits first."""
    out: list[Any] = []
    for v in views:
        if v.sample is not None:
            out.append(v.sample)
        else:
            out += [s for s in ctx.of("rank_status") if s.rank == v.rank][:1]
    return tuple(out)


def _majority(views: dict[int, RankView]) -> tuple[str | None, list[RankView]]:
    """The most common waiting place and the ranks in it (None when there is no strict winner)."""
    places = Counter(v.place for v in views.values() if is_waiting(v)).most_common(2)
    if not places or (len(places) > 1 and places[0][1] == places[1][1]):
        return None, []
    return places[0][0], [v for v in views.values() if is_waiting(v) and v.place == places[0][0]]


def _binding(culprits: list[RankView], waiters: list[RankView], ctx: Context) -> Binding:
    first = culprits[0]
    frame = first.sample.frames[0] if first.sample is not None and first.sample.frames else None
    return Binding(frozenset(v.rank for v in culprits), _cite(culprits + waiters[:3], ctx), {
        "where": first.label, "call_site": first.call_site or "an unknown call site",
        "frame": frame or first.call_site or "an unknown frame",
        "waiting": format_ranks(v.rank for v in waiters), "place": waiters[0].label if waiters else "?", "count": len(culprits)})


@predicate(binds=_PLACE_FIELDS, kinds=("stack_sample",))
def rank_elsewhere_while_others_wait(ctx: Context, activities: Sequence[str], max_fraction: float = 0.5,
                                     position: str = "any") -> Binding | None:
    """Alive ranks whose main thread is in one of `activities` while the other ranks wait in a collective.

    The ranks elsewhere must be at most `max_fraction` of the ranks sampled (ties allowed for two ranks).
    `position`: "coming" keeps only ranks on their way to the collective (stack moving between
    samples, or standing before the waiters' call in the same function); "skipped" only the
    others (past the call, in another branch, or not comparable); "any" both.
    """
    views = _views(ctx)
    sampled = [v for v in views.values() if v.sample is not None and alive(v)]
    odd = [v for v in sampled if v.activity in activities and not is_waiting(v)]
    waiters = [v for v in sampled if is_waiting(v)]
    if not odd or not waiters or len(odd) + len(waiters) != len(sampled):
        return None
    if position != "any" and any(coming(v, waiters) != (position == "coming") for v in odd):
        return None
    if len(odd) > max(1, max_fraction * len(sampled)):
        return None
    return _binding(odd, waiters, ctx)


@predicate(binds=_PLACE_FIELDS, kinds=("stack_sample",))
def rank_in_other_collective(ctx: Context) -> Binding | None:
    """A minority of ranks waits in a different collective than the majority (not DDP's epoch-end pattern)."""
    views = _views(ctx)
    place, majority = _majority(views)
    if place is None:
        return None
    odd = [v for v in views.values() if is_waiting(v) and v.place != place]
    if not odd or _epoch_end(majority, odd):
        return None
    return _binding(odd, majority, ctx)


def _epoch_end(majority: list[RankView], odd: list[RankView]) -> bool:
    """The majority is inside backward (DDP's gradient all_reduce), the others wait outside it."""
    return all(v.in_backward for v in majority) and not any(v.in_backward for v in odd)


@predicate(binds=(*_PLACE_FIELDS, "batches"), kinds=("stack_sample",))
def rank_out_of_batches(ctx: Context) -> Binding | None:
    """Ranks wait in a collective or barrier outside backward while the others are stuck in DDP's backward.

    The pattern of a rank that ran out of batches and waits at epoch end.
    """
    views = _views(ctx)
    stepping = [v for v in views.values() if is_waiting(v) and v.in_backward]
    done = [v for v in views.values() if is_waiting(v) and not v.in_backward and v.activity != "rendezvous"]
    if not stepping or not done or len(stepping) + len(done) != len([v for v in views.values() if alive(v)]):
        return None
    binding = _binding(done, stepping, ctx)
    batches = ", ".join(f"rank {v.rank} at {v.batch}" for v in stepping + done if v.batch is not None)
    return Binding(binding.ranks, binding.evidence, {**binding.fields, "batches": batches or "unknown"})


@predicate(binds=("behind",), kinds=("stack_sample",))
def batch_positions_differ(ctx: Context) -> Binding | None:
    """Ranks stand at different batch (or epoch) counters; binds the ranks that are behind."""
    views = [v for v in _views(ctx).values() if v.batch is not None]
    if len(views) < 2:
        return None
    key = {v.rank: (v.epoch or 0, v.batch or 0) for v in views}
    top = max(key.values())
    behind = [v for v in views if key[v.rank] < top]
    if not behind:
        return None
    return Binding(frozenset(v.rank for v in behind), _cite(behind, ctx),
                   {"behind": format_ranks(v.rank for v in behind)})


@predicate(binds=("gone", "waiting", "place"), kinds=("rank_status",))
def rank_gone_while_others_wait(ctx: Context) -> Binding | None:
    """Some ranks exited or have no process while the rest wait in a collective (not at rendezvous)."""
    views = _views(ctx)
    gone = [v for v in views.values() if v.status in ("exited", "missing", "zombie")]
    waiters = [v for v in views.values() if is_waiting(v)]
    if not gone or not waiters or any(v.activity == "rendezvous" for v in waiters):
        return None
    status = [s for s in ctx.of("rank_status") if s.rank in {v.rank for v in gone}]
    return Binding(frozenset(v.rank for v in gone), tuple(status) + _cite(waiters[:3], ctx), {
        "gone": format_ranks(v.rank for v in gone), "waiting": format_ranks(v.rank for v in waiters),
        "place": waiters[0].label})


@predicate(binds=("place", "waiting"), kinds=("stack_sample",))
def all_ranks_wait_together(ctx: Context, activities: Sequence[str] = ("collective", "barrier"),
                            min_ranks: int = 2) -> Binding | None:
    """Every rank of the job is alive and stuck in the same place, none missing: no rank to blame."""
    views = _views(ctx)
    if len(views) < min_ranks or any(not alive(v) for v in views.values()):
        return None
    places = {v.place for v in views.values()}
    if len(places) != 1 or not all(is_waiting(v) and v.activity in activities and not v.moving
                                   for v in views.values()):
        return None
    ws = ctx.world_size_hint()
    if ws is not None and len(views) < ws:
        return None
    return Binding(frozenset(), _cite(list(views.values())[:4], ctx),
                   {"place": next(iter(views.values())).label, "waiting": format_ranks(views)})


@predicate(binds=("missing", "waiting"), kinds=("stack_sample", "rank_status"))
def ranks_missing_at_rendezvous(ctx: Context) -> Binding | None:
    """The ranks that run wait in rendezvous / init while expected ranks have no process."""
    views = _views(ctx)
    missing = [v for v in views.values() if v.status in ("missing", "exited", "zombie")]
    running = [v for v in views.values() if alive(v)]
    if not missing or not running or not all(v.activity == "rendezvous" for v in running):
        return None
    status = [s for s in ctx.of("rank_status") if s.rank in {v.rank for v in missing}]
    return Binding(frozenset(v.rank for v in missing), tuple(status) + _cite(running[:3], ctx), {
        "missing": format_ranks(v.rank for v in missing), "waiting": format_ranks(v.rank for v in running)})


@predicate(binds=("conflict",), kinds=("rank_env",))
def env_conflict(ctx: Context, kinds: Sequence[str]) -> Binding | None:
    """Rank environments disagree: duplicate_rank, world_size_mismatch, master_endpoint_differs,
    shared_device or version_differs."""
    envs = ctx.of("rank_env")
    running = len({e.provenance.pid for e in envs if e.provenance.pid is not None}) or len(envs)
    found = [c for c in env_conflicts(envs, running) if c[0] in kinds]
    if not found:
        return None
    ranks = frozenset(r for c in found for r in c[1])
    cited = tuple(e for e in envs if e.rank in ranks or not ranks)[:8]
    return Binding(ranks, cited, {"conflict": "; ".join(c[2] for c in found)})
