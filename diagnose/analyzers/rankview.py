"""The per-rank picture of a report: which ranks were seen, how each ended, the first failures."""

from __future__ import annotations

from typing import Any

from diagnose.context import Context
from diagnose.output.report import EvidenceRef, RankState, RankSummary, Report, StackRef

MAX_TIMELINE = 12


def fill(report: Report, ctx: Context) -> None:
    """Fill ranks, rank_states and timeline of ``report`` from the evidence."""
    seen = ctx.ranks_seen()
    world = ctx.world_size()
    report.notes.extend(n for n in ctx.world_notes() if n not in report.notes)
    missing = sorted(set(range(world)) - seen) if world else []
    report.ranks = RankSummary(world_size=world, seen=sorted(seen), missing=missing)
    culprits = {r for c in report.causes[:1] for r in c.ranks}
    states: dict[int, str] = {}
    latest: dict[int, int] = {}
    stacks: dict[int, StackRef] = {}
    for st in ctx.of("stack_sample"):  # the latest sample of each rank (later samples may carry native frames)
        if st.rank is not None and st.sample >= latest.get(st.rank, -1):
            latest[st.rank] = st.sample
            states[st.rank] = st.op or st.activity
            if st.rank in culprits and st.frames:
                stacks[st.rank] = StackRef(rank=st.rank, pid=st.provenance.pid, thread=st.thread,
                                           frames=list(st.frames))
    report.stacks = [stacks[r] for r in sorted(stacks)]
    for c in ctx.of("collective_state"):
        if c.rank is not None:
            states[c.rank] = f"{c.op or 'collective'} #{c.seq} {c.state}"
    for ex in ctx.of("rank_exit"):
        if ex.rank is not None:
            states[ex.rank] = f"exited {ex.exitcode}" + (f" ({ex.signal})" if ex.signal else "")
    for r in missing:
        states.setdefault(r, "missing")
    report.timeline = _timeline(report, ctx)
    first = _first_failure(ctx)
    if first is None:  # no launcher verdict: the earliest timestamped failure line
        first = next((t.rank for t in report.timeline if t.time is not None and t.rank is not None), None)
    if report.command == "hang" and not ctx.of("rank_exit"):
        first = None  # a live job has no failure order: its samples are all taken now
    report.rank_states = [RankState(rank=r, state=s, culprit=r in culprits, first_failure=r == first)
                          for r, s in sorted(states.items())]


def _first_failure(ctx: Context) -> int | None:
    exits = [e for e in ctx.of("rank_exit") if e.rank is not None]
    roots = [e for e in exits if e.root_cause]
    if roots:
        return roots[0].rank
    timed = sorted((e for e in exits if e.time is not None), key=lambda e: e.time)
    return timed[0].rank if timed else None


def _timeline(report: Report, ctx: Context) -> list[EvidenceRef]:
    """The first failure seen on each rank (cited evidence, exits, collective positions), earliest first."""
    refs = [ref for c in report.causes[:3] for ref in c.evidence]
    refs += [EvidenceRef(source=e.provenance.source, line=e.provenance.line, rank=e.rank, time=e.time,
                         text=(e.text or "")[:300]) for e in [*ctx.of("rank_exit"), *ctx.of("collective_state")]]
    first: dict[Any, EvidenceRef] = {}
    for ref in sorted(refs, key=lambda r: (r.time is None, r.time or 0)):
        first.setdefault(ref.rank if ref.rank is not None else ref.source, ref)
    ordered = sorted(first.values(), key=lambda r: (r.time is None, r.time or 0, r.rank if r.rank is not None else -1))
    return ordered[:MAX_TIMELINE]
