"""Per-rank process state, launch environment and rendezvous connections, read from /proc (psutil).

Nothing here attaches to or signals a process: it only reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from diagnose.evidence import MemoryState, Provenance, RankEnv, RankStatus
from diagnose.probes.live.discovery import Job, ProcInfo
from diagnose.yamlload import pattern_table

PROBE = "procstate"
_STATUS = {psutil.STATUS_STOPPED: "stopped", psutil.STATUS_TRACING_STOP: "stopped",
           psutil.STATUS_ZOMBIE: "zombie", psutil.STATUS_DEAD: "exited"}


def prime(ranks: Iterable[ProcInfo]) -> dict[int, psutil.Process]:
    """Start the CPU-use clock of every rank (read again by `rank_states`)."""
    procs: dict[int, psutil.Process] = {}
    for info in ranks:
        try:
            proc = psutil.Process(info.pid)
            proc.cpu_percent(None)
            procs[info.pid] = proc
        except psutil.Error:
            continue
    return procs


def torch_version(pid: int) -> str | None:
    """The torch version a process has loaded (from its mapped libtorch), without importing torch."""
    table = pattern_table("live_patterns")
    try:
        with open(f"/proc/{pid}/maps") as fh:
            for line in fh:
                m = table["libtorch_mapping"].search(line)
                if m:
                    text = Path(m.group(1), "version.py").read_text()
                    v = table["torch_version_assignment"].search(text)
                    return v.group(1) if v else None
    except OSError:
        return None
    return None


def master_connections(proc: psutil.Process, port: str | None) -> int | None:
    """Number of TCP connections of the process to (or listening on) MASTER_PORT."""
    if not port or not port.isdigit():
        return None
    try:
        conns = proc.net_connections(kind="tcp")
    except psutil.Error:
        return None
    want = int(port)
    return sum(1 for c in conns if (c.raddr and c.raddr.port == want) or (c.laddr and c.laddr.port == want))


def rank_env(info: ProcInfo, host: str | None) -> RankEnv:
    """The launch environment of one rank, reduced to the variables that matter."""
    keep = pattern_table("live_patterns")["rank_env_keep"]
    variables = {k: v for k, v in sorted(info.env.items()) if keep.match(k)}
    version = torch_version(info.pid)
    if version:
        variables["torch_version"] = version  # not a signature: a rank_env variable
    if info.rank_var:
        variables["rank_variable"] = info.rank_var
    if info.rank_source:
        variables["rank_source"] = info.rank_source
    shown = " ".join(f"{k}={variables[k]}" for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                       "MASTER_PORT") if k in variables)
    return RankEnv(rank=info.rank, provenance=_prov(f"/proc/{info.pid}/environ", host, info.pid),
                   text=shown or f"pid {info.pid}", time=time.time(), variables=variables)


def _prov(source: str, host: str | None, pid: int | None) -> Provenance:
    return Provenance(probe=PROBE, source=source, host=host, pid=pid)


def master_connections_of(ranks: Iterable[ProcInfo]) -> dict[int, int]:
    """Connections to (or listening on) MASTER_PORT of each rank pid, from one read of the TCP table.

    Reading the table per process costs a parse of /proc/net/tcp each time (~25 ms a rank); where the
    system-wide read is refused, each process is read on its own."""
    want = {i.pid: int(p) for i in ranks if (p := i.env.get("MASTER_PORT", "")).isdigit()}
    if not want:
        return {}
    try:
        table = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return {pid: n for pid in want if (n := _own_connections(pid, want[pid])) is not None}
    out = dict.fromkeys(want, 0)
    for c in table:
        port = want.get(c.pid) if c.pid is not None else None
        if port is not None and ((c.raddr and c.raddr.port == port) or (c.laddr and c.laddr.port == port)):
            out[c.pid] += 1
    return out


def _own_connections(pid: int, port: int) -> int | None:
    try:
        return master_connections(psutil.Process(pid), str(port))
    except psutil.Error:
        return None


def rank_states(job: Job, procs: dict[int, psutil.Process], host: str | None) -> list[object]:
    """RankStatus and MemoryState of each rank, and RankStatus of the ranks not found."""
    out: list[object] = []
    conns = master_connections_of(job.ranks)
    for info in job.ranks:
        out.extend(_one_state(info, job, procs.get(info.pid), host, conns.get(info.pid)))
    for r in job.missing:
        out.append(RankStatus(rank=r, provenance=_prov("process table", host, None), status="missing",
                              text=f"rank {r} of {job.world_size}: no process on this host",
                              detail="expected here (WORLD_SIZE/LOCAL_WORLD_SIZE) but not running"))
    for r in job.elsewhere:
        out.append(RankStatus(rank=r, provenance=_prov("process table", host, None), status="no_evidence",
                              text=f"rank {r} of {job.world_size} runs on another host", detail="other host"))
    return out


def _one_state(info: ProcInfo, job: Job, proc: psutil.Process | None, host: str | None,
               conns: int | None) -> list[object]:
    src = f"/proc/{info.pid}/status"
    try:
        proc = proc or psutil.Process(info.pid)
        with proc.oneshot():
            status, rss, threads = proc.status(), proc.memory_info().rss, proc.num_threads()
            cpu = proc.cpu_percent(None)
    except psutil.Error:
        return [RankStatus(rank=info.rank, provenance=_prov(src, host, info.pid), status="exited",
                           text=f"rank {info.rank} pid {info.pid} ended while being probed")]
    workers = job.workers_of(info.pid)
    alive = [w for w in workers if _alive(w.pid)]
    detail = (f"state={status} cpu={cpu:.0f}% rss={rss >> 20}MiB threads={threads} "
              f"workers={len(alive)}/{len(workers)} alive"
              + (f" master_port_conns={conns}" if conns is not None else ""))
    return [
        RankStatus(rank=info.rank, provenance=_prov(src, host, info.pid), status=_STATUS.get(status, "alive"),
                   text=f"rank {info.rank} pid {info.pid}: {detail}", time=time.time(), detail=detail),
        MemoryState(rank=info.rank, provenance=_prov(src, host, info.pid), device="host", used_bytes=rss,
                    text=f"rank {info.rank} rss {rss >> 20} MiB"),
    ]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False
