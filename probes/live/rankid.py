"""Ranks of processes that carry no rank variable: what each launcher leaves instead.

- Lightning's subprocess launcher: the children carry LOCAL_RANK (and NODE_RANK), the process
  that started them with the same command line is local rank 0.
- mp.spawn and multiprocessing start methods: the rank processes are the children of one
  torch process (``--multiprocessing-fork`` for spawn, the forkserver's children, fork's copies);
  their start order is the process index, the store server (rank 0 hosts the TCPStore) confirms
  rank 0, and py-spy's locals (``i`` of torch's spawn wrapper, a ``rank`` argument) settle it.
- A bare python per rank from a shell loop: the rank is an argument (read in discovery), or the
  start order of the shell's children.

Every rank gets ``rank_source``: how it was identified, in words. The tables are in
``rules/signatures/live/processes.yaml``.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import psutil

ORDER = "start order"  # the weakest source: py-spy locals or the store may override it
STARTER = "started the local ranks"  # a rank process that started the others (Lightning's local rank 0)


def assign(infos: dict[int, Any], anc: Mapping[int, list[int]], sig: Mapping[str, Any]) -> dict[int, Any]:
    """Give a rank to the rank processes among `infos` that have none; other processes are left as they are."""
    out = {p: _forked(i, infos, sig) for p, i in infos.items()}
    ranked = {p for p, i in out.items() if i.rank is not None and i.role == "rank"}
    pool = {p for p, i in out.items() if i.rank is None and i.role in ("other", "worker")
            and not sig["never_ranks_re"].search(i.cmdline) and (i.role == "other" or i.spawned)
            and not any(a in ranked for a in anc[p]) and _has_torch(p)}
    _lightning(out, pool, anc)
    ranked = {p for p, i in out.items() if i.rank is not None and i.role == "rank"}
    pool = {p for p in pool if out[p].rank is None and not any(a in ranked for a in anc[p])}
    _by_order(out, pool, anc, ranked)
    return out


def _forked(info: Any, infos: Mapping[int, Any], sig: Mapping[str, Any]) -> Any:
    """A forkserver's child (same command line as its parent, the server) is a started process."""
    parent = infos.get(info.ppid)
    if sig["forkserver_re"].search(info.cmdline) and parent is not None and parent.cmdline == info.cmdline:
        return dataclasses.replace(info, spawned=True, role="other" if info.rank is None else info.role)
    return info


def _lightning(out: dict[int, Any], pool: set[int], anc: Mapping[int, list[int]]) -> None:
    """Processes with LOCAL_RANK but no RANK, started by a process running the same command (local rank 0)."""
    groups: dict[int, list[int]] = defaultdict(list)
    for p in pool:
        info = out[p]
        parent = out.get(info.ppid)
        if info.local_rank is not None and parent is not None and info.ppid in pool and parent.local_rank is None \
                and parent.cmdline == info.cmdline:
            groups[info.ppid].append(p)
    for parent, children in groups.items():
        size = len(children) + 1
        base = (out[children[0]].node_rank or 0) * size
        how = "LOCAL_RANK and NODE_RANK in its environment (Lightning's subprocess launcher sets no RANK)"
        for p in children:
            out[p] = _ranked(out[p], base + out[p].local_rank, how, "LOCAL_RANK")
        out[parent] = _ranked(out[parent], base, "it started the other local ranks with its own command line "
                              "(Lightning's subprocess launcher: local rank 0)", STARTER, local_rank=0)
        for p in (parent, *children):
            if out[p].world_size is None:
                out[p] = dataclasses.replace(out[p], world_size=size)


def _by_order(out: dict[int, Any], pool: set[int], anc: Mapping[int, list[int]], ranked: set[int]) -> None:
    """Rank processes of a multiprocessing parent or shell loop: the torch processes one level below it."""
    def nearest(p: int) -> int | None:
        return next((a for a in anc[p] if a in pool), None)

    below: dict[int | None, list[int]] = defaultdict(list)
    for p in pool:
        below[nearest(p)].append(p)
    groups: dict[int, list[int]] = {}
    for root in below[None]:
        if any(root in anc[r] for r in ranked):
            continue  # a torch process that launched ranked processes: a launcher
        if below.get(root):
            groups[root] = below[root]
            out[root] = dataclasses.replace(out[root], role="launcher", launcher=_parent_kind(below[root], out))
    loose = [r for r in below[None] if r not in groups and not any(r in anc[x] for x in ranked)]
    by_parent: dict[int, list[int]] = defaultdict(list)
    for p in loose:
        by_parent[out[p].ppid].append(p)
    groups.update(by_parent)
    for parent, members in groups.items():
        members = sorted(members, key=lambda p: (_started(p), p))
        what = _parent_kind(members, out)
        for index, p in enumerate(members):
            how = f"{ORDER} among the {len(members)} rank processes under pid {parent} ({what})"
            out[p] = _ranked(out[p], index, how, ORDER,
                             world_size=out[p].world_size or len(members))


def _parent_kind(members: Iterable[int], out: Mapping[int, Any]) -> str:
    return "mp.spawn / multiprocessing" if any(out[p].spawned or out[p].cmdline == out.get(out[p].ppid, out[p]).cmdline
                                              for p in members) else "launcher process"


def _ranked(info: Any, rank: int, how: str, var: str, **more: Any) -> Any:
    return dataclasses.replace(info, role="rank", rank=rank, rank_source=how, rank_var=var, **more)


def _started(pid: int) -> float:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return 0.0


def _has_torch(pid: int) -> bool:
    """The process has libtorch mapped (a candidate rank), read from /proc/PID/maps."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return any(b"/libtorch" in line for line in fh)
    except OSError:
        return False


def store_server(ranks: list[Any]) -> int | None:
    """The pid among `ranks` that listens on a port every other rank is connected to (the TCPStore: rank 0)."""
    listening: dict[int, set[int]] = {}
    peers: dict[int, set[int]] = {}
    for info in ranks:
        try:
            conns = psutil.Process(info.pid).net_connections(kind="tcp")
        except psutil.Error:
            return None
        listening[info.pid] = {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN}
        peers[info.pid] = {c.raddr.port for c in conns if c.raddr and c.status == psutil.CONN_ESTABLISHED}
    found = [p for p, ports in listening.items()
             if any(all(port in peers[q] for q in peers if q != p) for port in ports)]
    return found[0] if len(found) == 1 and len(ranks) > 1 else None


def confirm_rank0(ranks: list[Any]) -> list[Any]:
    """Ranks known only by start order: the store server is rank 0 (the others keep their order)."""
    weak = [i for i in ranks if i.rank_var == ORDER]
    if not weak or len(weak) != len(ranks):
        return ranks
    server = store_server(ranks)
    if server is None:
        return ranks
    first = next(i for i in ranks if i.pid == server)
    rest = [i for i in sorted(ranks, key=lambda i: i.rank) if i.pid != server]
    how = "it hosts the TCPStore every other rank is connected to (rank 0)"
    return [dataclasses.replace(first, rank=0, rank_source=how, rank_var="store")] + [
        dataclasses.replace(i, rank=n + 1) for n, i in enumerate(rest)]


def ranks_from_locals(threads_by_pid: Mapping[int, list[dict[str, Any]]], sig: Mapping[str, Any],
                      library: Any) -> dict[int, tuple[int, str]]:
    """pid -> (rank, how) from py-spy --locals of each process's main thread; only a consistent set is returned."""
    found: dict[int, tuple[int, str]] = {}
    for pid, frames in threads_by_pid.items():
        hit = _rank_local(frames, sig, library)
        if hit is not None:
            found[pid] = hit
    ranks = [r for r, _ in found.values()]
    return found if len(set(ranks)) == len(ranks) else {}


def _rank_local(frames: list[dict[str, Any]], sig: Mapping[str, Any], library: Any) -> tuple[int, str] | None:
    for item in sig["rank_locals"]:
        for frame in frames:
            name = str(frame.get("filename", ""))
            if item.get("user") and library.search(name):
                continue
            if "file_re" in item and not item["file_re"].search(name):
                continue
            if "function_re" in item and not item["function_re"].search(str(frame.get("name", ""))):
                continue
            for local in frame.get("locals") or []:
                value = str(local.get("repr", ""))
                if item["name_re"].search(str(local.get("name", ""))) and value.isdigit():
                    where = f"{frame.get('name')} ({frame.get('short_filename') or name})"
                    return int(value), f"py-spy locals: {item['what']} {local.get('name')}={value} in {where}"
    return None
