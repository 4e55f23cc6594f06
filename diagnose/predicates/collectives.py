"""Predicates over collective states (post-mortem evidence): which collective timed out, on which ranks, at which
sequence number, and which ranks were behind, ahead, elsewhere or absent."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate, ranks_of
from diagnose.ranks import format_ranks


@predicate(binds=("op", "seq", "numel", "victims"), kinds=("collective_state",))
def collective_timed_out(ctx: Context, ops: Sequence[str] = (), max_numel: int | None = None,
                         min_numel: int | None = None, max_seq: int | None = None,
                         min_seq: int | None = None, unnumbered: bool = False) -> Binding | None:
    """A collective timed out on some rank (watchdog / gloo), optionally of given ops or sizes, or among the first
    ``max_seq`` collectives of its process group (the sequence number the watchdog prints, counted from 1), or at
    ``min_seq`` or later (with ``unnumbered``, a timeout whose line prints no sequence number counts as later)."""
    hits = [c for c in ctx.of("collective_state") if c.state == "timed_out"
            and (not ops or (c.op or "").lower() in ops)]
    if max_seq is not None:
        hits = [c for c in hits if c.seq is not None and c.seq <= max_seq]
    if min_seq is not None:
        hits = [c for c in hits if (c.seq is None and unnumbered) or (c.seq is not None and c.seq >= min_seq)]
    if max_numel is not None:
        hits = [c for c in hits if _numel(c) is not None and _numel(c) <= max_numel]
    if min_numel is not None:
        hits = [c for c in hits if _numel(c) is not None and _numel(c) >= min_numel]
    if not hits:
        return None
    first = hits[0]
    return Binding(ranks_of(hits), tuple(hits[:50]), {
        "op": first.op or "a collective", "seq": first.seq if first.seq is not None else "?",
        "numel": first.shape or "?", "victims": format_ranks(ranks_of(hits)), "count": len(hits)})


def _numel(state: Any) -> int | None:
    """Element count of a collective's tensor, when its shape says (``"16"`` or ``"[4, 4]"``)."""
    digits = [int(d) for d in re.findall(r"\d+", state.shape or "")]  # regex: the numbers of a shape
    if not digits:
        return None
    total = 1
    for d in digits:
        total *= d
    return total


@predicate(binds=("seq", "behind"), kinds=("collective_state",))
def rank_behind_in_sequence(ctx: Context) -> Binding | None:
    """Ranks whose last enqueued collective in a process group is behind the other members' (they never launched it)."""
    groups: dict[str, list[Any]] = {}
    for c in ctx.of("collective_state"):
        if c.last_enqueued is not None and c.rank is not None:
            groups.setdefault(c.process_group, []).append(c)
    behind: list[Any] = []
    top = None
    for states in groups.values():
        if len({c.rank for c in states}) < 2:
            continue
        high = max(c.last_enqueued for c in states)
        lagging = [c for c in states if c.last_enqueued < high]
        if lagging and len(lagging) < len(states):
            behind += lagging
            top = high if top is None else max(top, high)
    if not behind:
        return None
    return Binding(ranks_of(behind), tuple(behind), {"seq": top, "behind": format_ranks(ranks_of(behind))})


@predicate(binds=("behind", "seq", "others"), kinds=("collective_state",))
def timed_out_at_different_seqs(ctx: Context, min_gap: int = 1) -> Binding | None:
    """Ranks of one process group whose watchdog timed out in different collectives (sequence numbers at least
    ``min_gap`` apart): the ranks did not issue the same sequence of collectives. The ranks at the lowest number
    are the culprits when they are fewer than the others (the ones that fell out of step). A rank seen at two numbers
    of one group says the lines come from several groups (a log older than torch 2.3 does not name them): no finding."""
    for states in _numbered_timeouts(ctx).values():
        low, high = min(c.seq for c in states), max(c.seq for c in states)
        if high - low < min_gap or any(len({c.seq for c in states if c.rank == r}) > 1 for r in ranks_of(states)):
            continue  # one rank at two numbers: lines of several groups that the log does not tell apart
        lowest = [c for c in states if c.seq == low]
        rest = [c for c in states if c.seq != low]
        odd = lowest if len(ranks_of(lowest)) <= len(ranks_of(rest)) else rest
        return Binding(ranks_of(odd), tuple(lowest[:10] + rest[:10]), {
            "behind": format_ranks(ranks_of(lowest)), "seq": low,
            "others": ", ".join(f"#{s}" for s in sorted({c.seq for c in rest}))})
    return None


@predicate(binds=("seq", "ops"), kinds=("collective_state",))
def ops_differ_at_same_seq(ctx: Context) -> Binding | None:
    """Ranks of one group stand at the same sequence number in different collectives; the minority is the culprit."""
    at: dict[tuple[str, int], dict[str, list[Any]]] = {}
    for c in ctx.of("collective_state"):
        if c.seq is not None and c.op and c.state != "completed" and c.rank is not None:
            at.setdefault((c.process_group, c.seq), {}).setdefault(c.op, []).append(c)
    for (_pg, seq), by_op in sorted(at.items(), key=lambda kv: kv[0][1]):
        if len(by_op) < 2:
            continue
        minority = min(by_op.values(), key=len)
        ops = " vs ".join(f"{op} on ranks {format_ranks(ranks_of(v))}" for op, v in by_op.items())
        cited = [c for v in by_op.values() for c in v[:3]]
        return Binding(ranks_of(minority), tuple(cited), {"seq": seq, "ops": ops})
    return None


@predicate(binds=("absent", "seq", "victims"), kinds=("collective_state",))
def timeout_leaves_out_a_rank(ctx: Context, rank_zero: bool = True) -> Binding | None:
    """The ranks that timed out in one collective (one process group, one sequence number) leave a gap below the
    highest of them: a rank with no pending collective prints no timeout, so the absent rank was never in it (stuck
    in its own code). A rank that timed out in another collective of the group is not absent (the ranks disagree on
    the sequence: other rules read that). Only a small gap counts (fewer absent ranks than victims, at least two
    victims), so that a paste of a few ranks' lines is not read as absence. ``rank_zero`` false: a gap that takes in
    rank 0 does not count."""
    for states in _numbered_timeouts(ctx).values():
        seen = ranks_of(states)
        for seq in sorted({c.seq for c in states}):
            at_seq = [c for c in states if c.seq == seq]
            victims = ranks_of(at_seq)
            absent = set(range(max(victims) + 1)) - seen
            if len(victims) < 2 or not absent or len(absent) >= len(victims) or (0 in absent and not rank_zero):
                continue
            return Binding(frozenset(absent), tuple(at_seq[:20]), {
                "absent": format_ranks(absent), "seq": seq, "victims": format_ranks(victims)})
    return None


def _numbered_timeouts(ctx: Context) -> dict[str, list[Any]]:
    """Timed-out collective states that name their rank and sequence number, per process group."""
    groups: dict[str, list[Any]] = {}
    for c in ctx.of("collective_state"):
        if c.state == "timed_out" and c.seq is not None and c.rank is not None:
            groups.setdefault(c.process_group, []).append(c)
    return groups


@predicate(binds=("seq",), kinds=("collective_state",))
def victims_ran_ahead(ctx: Context, min_gap: int = 1) -> Binding | None:
    """Timed-out ranks had already enqueued later work: they were waiting on a peer, not stuck alone."""
    ahead = [c for c in ctx.of("collective_state")
             if c.seq is not None and c.last_enqueued is not None and c.last_enqueued - c.seq >= min_gap]
    if not ahead:
        return None
    return Binding(ranks_of(ahead), tuple(ahead[:20]), {"seq": ahead[0].seq})
