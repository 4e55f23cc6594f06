"""Cross-rank facts from live stacks, process states and environments.

A hung rank is a victim when it waits where the others wait; the culprit is the rank
that is somewhere else. These functions compare ranks; the rules decide what it means.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from diagnose.evidence import CollectiveState, Provenance, RankEnv, RankStatus, StackSample

WAITING = frozenset({"collective", "barrier", "rendezvous"})
DEAD = frozenset({"exited", "missing", "zombie"})
_WORDS = {"sleeping": "a sleep", "checkpoint_io": "checkpoint I/O", "user_code": "user code"}


@dataclass(frozen=True)
class RankView:
    """One rank's latest known state, merged from its samples and its process status."""

    rank: int
    activity: str
    op: str | None = None
    call_site: str | None = None
    moving: bool = False  # the samples differ: slow rather than stuck
    in_backward: bool = False  # some sample showed backward: a collective here is DDP's gradient all_reduce
    status: str = "alive"
    epoch: int | None = None
    batch: int | None = None
    sample: StackSample | None = None
    first: StackSample | None = None  # the earliest sample, to compare with the latest

    @property
    def label(self) -> str:
        """The place in words: the collective's name, or the activity."""
        return self.op or _WORDS.get(self.activity, self.activity.replace("_", " "))

    @property
    def place(self) -> str:
        """Where the rank is, e.g. 'collective all_reduce' or 'checkpoint_io'."""
        return f"{self.activity} {self.op}" if self.op else self.activity


def rank_views(evidence: Iterable[Any]) -> dict[int, RankView]:
    """Latest stack sample and status of every rank that has either."""
    samples: dict[int, list[StackSample]] = defaultdict(list)
    status: dict[int, str] = {}
    for ev in evidence:
        if isinstance(ev, StackSample) and ev.rank is not None:
            samples[ev.rank].append(ev)
        elif isinstance(ev, RankStatus) and ev.rank is not None:
            status[ev.rank] = ev.status
    views: dict[int, RankView] = {}
    for rank in sorted(set(samples) | set(status)):
        ordered = sorted(samples.get(rank, []), key=lambda s: s.sample)
        st = status.get(rank, "alive")
        if not ordered:
            views[rank] = RankView(rank=rank, activity="gone" if st in DEAD else "unknown", status=st)
            continue
        last = ordered[-1]
        moving = len(ordered) > 1 and bool(progress_between(ordered[0], last))
        views[rank] = RankView(rank=rank, activity=last.activity, op=last.op, call_site=last.call_site,
                               moving=moving, status=st, epoch=last.epoch, batch=last.batch, sample=last,
                               in_backward=any(s.activity == "backward" for s in ordered), first=ordered[0])
    return views


def progress_between(first: StackSample, last: StackSample) -> str | None:
    """What changed from one sample of a rank to a later one, in words; None when nothing did."""
    if (first.epoch, first.batch) != (last.epoch, last.batch) and last.batch is not None:
        return f"batch {first.batch} -> {last.batch}" if first.epoch == last.epoch else (
            f"epoch {first.epoch} -> {last.epoch}")
    changed = [f"{k} {first.counters[k]} -> {v}" for k, v in last.counters.items()
               if k in first.counters and first.counters[k] != v]
    if changed:
        return ", ".join(changed[:2])
    if _python_frames(first) != _python_frames(last):
        return f"stack moved from {_top(first)} to {_top(last)}"
    return None


def _top(sample: StackSample) -> str:
    frames = _python_frames(sample)
    return frames[0] if frames else "?"


def _parse(frame: str) -> tuple[str, str, int | None]:
    """'func (file:line)' -> (func, file, line)."""
    func, _, rest = frame.rpartition(" (")
    where, _, line = rest.rstrip(")").rpartition(":")
    return func, where, int(line) if line.isdigit() else None


def position(odd: RankView, waiter: RankView) -> str:
    """Where `odd` stands against the collective `waiter` waits in: 'before', 'after' or 'unknown'.

    The stacks are compared from the outermost frame: at the first frame the two share by
    function and file but not by line, a smaller line is before the collective call (the rank
    is on its way), a larger one past it (it skipped the collective or took another branch), and
    so is a smaller line whose block leaves (continue, break, return, raise) before the call.
    """
    if odd.sample is None or waiter.sample is None:
        return "unknown"
    a = [_parse(f) for f in reversed(_python_frames(odd.sample))]
    b = [_parse(f) for f in reversed(_python_frames(waiter.sample))]
    for (fa, wa, la), (fb, wb, lb) in zip(a, b, strict=False):
        if (fa, wa) != (fb, wb) or la is None or lb is None:
            return "unknown"
        if la != lb:
            leaves = odd.sample.exits.get(f"{wa}:{la}")
            return "before" if la < lb and (leaves is None or leaves > lb) else "after"
    return "unknown"


def coming(odd: RankView, waiters: Sequence[RankView]) -> bool:
    """The odd rank is slow, not absent: its stack moves between samples, or it stands before the waiters' call."""
    return odd.moving or (bool(waiters) and position(odd, waiters[0]) == "before")


def progress_lines(evidence: Iterable[Any]) -> list[str]:
    """'rank R: what changed' for every rank whose samples show progress."""
    out = []
    for rank, view in rank_views(evidence).items():
        if view.first is not None and view.sample is not None and view.first is not view.sample:
            change = progress_between(view.first, view.sample)
            if change:
                out.append(f"rank {rank}: {change}")
    return out


def _python_frames(sample: StackSample) -> tuple[str, ...]:
    """Frames without native ones (a native sample lists more frames for the same place)."""
    return tuple(f for f in sample.frames if ".py:" in f)


def is_waiting(view: RankView) -> bool:
    """Blocked where peers are needed: a collective, barrier, rendezvous, or stuck in DDP's backward."""
    if view.status in DEAD or view.moving:
        return False
    return view.activity in WAITING or view.activity == "backward"


def alive(view: RankView) -> bool:
    """The rank's process runs (possibly stuck)."""
    return view.status not in DEAD and view.activity != "gone"


@dataclass(frozen=True)
class Split:
    """The ranks that wait together, and the ranks elsewhere."""

    waiting: tuple[int, ...]
    place: str | None  # the most common waiting place
    others: tuple[int, ...]


def split(views: dict[int, RankView]) -> Split:
    """Partition ranks into the waiting majority place and the rest."""
    places = Counter(v.place for v in views.values() if is_waiting(v))
    if not places:
        return Split((), None, tuple(sorted(views)))
    place = places.most_common(1)[0][0]
    waiting = tuple(r for r, v in sorted(views.items()) if is_waiting(v) and v.place == place)
    return Split(waiting, place, tuple(r for r in sorted(views) if r not in waiting))


def env_conflicts(envs: Sequence[RankEnv], ranks_running: int) -> list[tuple[str, list[int], str]]:
    """Inconsistencies across rank environments: (kind, ranks, summary).

    kinds: duplicate_rank, world_size_mismatch, master_endpoint_differs, shared_device, version_differs.
    Ranks that are merely missing are not a conflict (rules read RankStatus for those).
    """
    out: list[tuple[str, list[int], str]] = []
    by_rank: dict[str, list[RankEnv]] = defaultdict(list)
    for env in envs:
        by_rank[env.variables.get("RANK", str(env.rank))].append(env)
    for value, group in sorted(by_rank.items()):
        if len(group) > 1 and value not in ("None", ""):
            pids = ", ".join(str(e.provenance.pid) for e in group)
            out.append(("duplicate_rank", [int(value)] if value.isdigit() else [],
                        f"RANK={value} is set in {len(group)} processes (pids {pids})"))
    out.extend(_differs(envs, "WORLD_SIZE", "world_size_mismatch"))
    out.extend(_world_size_exceeded(envs, ranks_running))
    out.extend(_differs(envs, "MASTER_ADDR", "master_endpoint_differs"))
    out.extend(_differs(envs, "MASTER_PORT", "master_endpoint_differs"))
    out.extend(_differs(envs, "torch_version", "version_differs"))  # not a signature: a rank_env variable
    out.extend(_shared_devices(envs))
    return out


def _world_size_exceeded(envs: Sequence[RankEnv], running: int) -> list[tuple[str, list[int], str]]:
    """A RANK at or above WORLD_SIZE, or more rank processes on one host than WORLD_SIZE."""
    out = []
    for e in envs:
        rank, size = e.variables.get("RANK", ""), e.variables.get("WORLD_SIZE", "")
        if rank.isdigit() and size.isdigit() and int(rank) >= int(size):
            out.append(("world_size_mismatch", [int(rank)], f"RANK={rank} but WORLD_SIZE={size}"))
    sizes = {e.variables.get("WORLD_SIZE") for e in envs}
    if len(sizes) == 1 and (size := next(iter(sizes))) and size.isdigit() and running > int(size):
        out.append(("world_size_mismatch", [], f"{running} rank processes run but WORLD_SIZE={size}"))
    return out


def _differs(envs: Sequence[RankEnv], key: str, kind: str) -> list[tuple[str, list[int], str]]:
    values = Counter(e.variables[key] for e in envs if key in e.variables)
    if len(values) < 2:
        return []
    common = values.most_common(1)[0][0]
    odd = sorted(e.rank for e in envs if e.rank is not None and e.variables.get(key, common) != common)
    shown = ", ".join(f"{v} ({n} ranks)" for v, n in values.most_common())
    return [(kind, odd, f"{key} differs across ranks: {shown}")]


def _shared_devices(envs: Sequence[RankEnv]) -> list[tuple[str, list[int], str]]:
    """Two ranks whose visible device lists are the same single device."""
    seen: dict[str, list[int]] = defaultdict(list)
    for e in envs:
        dev = e.variables.get("CUDA_VISIBLE_DEVICES")
        if dev and "," not in dev and e.rank is not None:
            seen[dev].append(e.rank)
    return [("shared_device", ranks, f"ranks {ranks} all see only device {dev}")
            for dev, ranks in sorted(seen.items()) if len(ranks) > 1]


def stack_facts(evidence: Sequence[Any]) -> list[CollectiveState]:
    """Collective positions read from stacks, as CollectiveState records the post-mortem rules read."""
    out: list[CollectiveState] = []
    for view in rank_views(evidence).values():
        s = view.sample
        if s is None or view.activity not in ("collective", "barrier") or not view.op:
            continue
        prov = Provenance(probe="stacks", source=s.provenance.source, host=s.provenance.host,
                          pid=s.provenance.pid)
        out.append(CollectiveState(rank=view.rank, provenance=prov, text=s.text, time=s.time,
                                   op=view.op, state="started"))
    return out
