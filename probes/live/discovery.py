"""Find the rank processes of a job on this host: Slurm job id, torchrun run id or launcher pid.

Launcher knowledge (rank variables, launcher command lines) is data, in
``rules/signatures/live/processes.yaml``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import psutil
import yaml

from diagnose.errors import ProbeError
from diagnose.probes.live import rankid
from diagnose.ranks import format_ranks
from diagnose.yamlload import builtin_rules_dir

KINDS = ("slurm", "torchrun", "pid")


@dataclass(frozen=True)
class ProcInfo:
    """One process of the job and what it is."""

    pid: int
    ppid: int
    cmdline: str
    env: Mapping[str, str]
    role: str = "rank"  # rank | worker | launcher | other
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    local_world_size: int | None = None
    rank_var: str | None = None
    parent_pid: int | None = None  # for workers: the rank process that started them
    launcher: str | None = None
    rank_source: str | None = None  # how the rank was identified, in words
    node_rank: int | None = None
    spawned: bool = False  # a child of a multiprocessing start method


@dataclass
class Job:
    """The processes of one job on this host, grouped by role."""

    kind: str
    id: str
    ranks: list[ProcInfo] = field(default_factory=list)
    workers: list[ProcInfo] = field(default_factory=list)
    launchers: list[ProcInfo] = field(default_factory=list)
    world_size: int | None = None
    missing: list[int] = field(default_factory=list)  # expected on this host, not found
    elsewhere: list[int] = field(default_factory=list)  # expected on other hosts
    notes: list[str] = field(default_factory=list)

    def workers_of(self, pid: int) -> list[ProcInfo]:
        """Helper processes (dataloader workers) started by the rank with this pid."""
        return [w for w in self.workers if w.parent_pid == pid]


@lru_cache(maxsize=1)
def process_signatures() -> dict[str, Any]:
    """The launcher and rank-variable table, compiled."""
    data = yaml.safe_load((builtin_rules_dir() / "signatures" / "live" / "processes.yaml").read_text())
    for key in ("launchers", "helpers"):
        for item in data[key]:
            item["re"] = re.compile(item["cmdline"])
    for key in ("never_ranks", "spawned_child", "forkserver"):
        data[f"{key}_re"] = re.compile(data[key])
    data["arguments_re"] = {k: [re.compile(p) for p in v] for k, v in data["arguments"].items()}
    for item in data["rank_locals"]:
        for key in ("file", "function", "name"):
            if key in item:
                item[f"{key}_re"] = re.compile(item[key])
    return data


def discover(job: str) -> Job:
    """Find the job's processes; ``slurm:``, ``torchrun:``, ``pid:`` force the kind of id."""
    kind, _, ident = job.partition(":") if job.split(":", 1)[0] in KINDS else ("", "", job)
    ident = ident.strip()
    if not ident:
        raise ProbeError(f"empty job id in {job!r}")
    tried = [kind] if kind else list(KINDS)
    environs = _EnvironScan()
    for k in tried:
        pids = _not_self(_FINDERS[k](ident, environs), environs)
        if pids:
            found = _classify(k, ident, pids, environs)
            if found.ranks:
                return found
    raise ProbeError(f"no rank process of job {ident!r} on this host (tried {', '.join(tried)} id)"
                     + _why_not(ident, tried, environs))


def pid_max() -> int:
    """The largest process id this kernel hands out."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return 4194304


def _why_not(ident: str, tried: list[str], environs: _EnvironScan) -> str:
    """The reason discovery found nothing, where one can be told: a pid out of range, permissions."""
    if ident.isdigit() and int(ident) > pid_max() and "pid" in tried:
        return f"; {ident} is no process id (the largest is {pid_max()})"
    if ident.isdigit() and "pid" in tried and int(ident) in environs.denied:
        owner = _owner(int(ident))
        return (f"; permission denied: process {ident} belongs to {owner}, whose environment and stacks this "
                "user cannot read (run as that user, or as root)")
    if environs.denied:
        owners = sorted({_owner(p) for p in environs.denied})
        return (f"; permission denied reading {len(environs.denied)} process(es) of other users ({', '.join(owners[:3])}):"
                " if the job is theirs, run as that user or as root")
    return ""


def _owner(pid: int) -> str:
    try:
        return f"uid {psutil.Process(pid).uids().real}"
    except psutil.Error:
        return "another user"


def _not_self(pids: list[int], environs: _EnvironScan) -> list[int]:
    """Drop this probe itself and its ancestors, and its own Slurm step (``srun --overlap``)."""
    me = psutil.Process()
    own = {me.pid}
    with contextlib.suppress(psutil.Error):
        own |= {p.pid for p in me.parents()}
    step = [os.environ.get(k) for k in ("SLURM_JOB_ID", "SLURM_STEP_ID")]
    return [p for p in pids if p not in own
            and (None in step or [environs.get(p).get(k) for k in ("SLURM_JOB_ID", "SLURM_STEP_ID")] != step)]


class _EnvironScan:
    """Environments of every readable process, read once and only when needed."""

    def __init__(self) -> None:
        self._all: dict[int, dict[str, str]] | None = None
        self.denied: set[int] = set()  # processes whose environment this user may not read

    def all(self) -> dict[int, dict[str, str]]:
        if self._all is None:
            self._all = {}
            for proc in psutil.process_iter():
                env = self._read(proc.pid)
                if env:
                    self._all[proc.pid] = env
        return self._all

    def get(self, pid: int) -> dict[str, str]:
        if self._all is not None and pid in self._all:
            return self._all[pid]
        return self._read(pid)

    def _read(self, pid: int) -> dict[str, str]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                return _parse_environ(fh.read(1 << 20))
        except PermissionError:
            self.denied.add(pid)
        except OSError:
            pass
        return {}


def read_environ(pid: int) -> dict[str, str]:
    """The environment a process was started with; empty when unreadable or gone."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read(1 << 20)
    except OSError:
        return {}
    return _parse_environ(raw)


def _parse_environ(raw: bytes) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


def _find_slurm(ident: str, environs: _EnvironScan) -> list[int]:
    if not ident.isdigit():
        return []
    scontrol = shutil.which("scontrol")
    if scontrol:
        try:
            out = subprocess.run([scontrol, "listpids", ident], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            out = None
        if out is not None and out.returncode == 0:
            pids = [int(line.split()[0]) for line in out.stdout.splitlines()[1:] if line.split()[:1]
                    and line.split()[0].isdigit()]
            return _with_descendants(pids)
    return _with_descendants([p for p, env in environs.all().items() if env.get("SLURM_JOB_ID") == ident])


def _find_torchrun(ident: str, environs: _EnvironScan) -> list[int]:
    pids = [p for p, env in environs.all().items() if env.get("TORCHELASTIC_RUN_ID") == ident]
    parents = {_ppid(p) for p in pids}
    agents = [p for p in parents if p and _is_launcher(_cmdline(p))]
    return _with_descendants(pids + agents)


def _find_pid(ident: str, environs: _EnvironScan) -> list[int]:
    if not ident.isdigit() or int(ident) > pid_max() or not psutil.pid_exists(int(ident)):
        return []
    return _with_descendants([int(ident)])


_FINDERS = {"slurm": _find_slurm, "torchrun": _find_torchrun, "pid": _find_pid}


def _with_descendants(pids: Iterable[int]) -> list[int]:
    seen: dict[int, None] = {}
    for pid in pids:
        seen[pid] = None
        try:
            for child in psutil.Process(pid).children(recursive=True):
                seen[child.pid] = None
        except psutil.Error:
            continue
    return list(seen)


def _ppid(pid: int) -> int:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return 0


def _cmdline(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def _is_launcher(cmdline: str) -> str | None:
    for item in process_signatures()["launchers"]:
        if item["re"].search(cmdline):
            return str(item["name"])
    return None


def _first_int(env: Mapping[str, str], names: list[str]) -> tuple[int | None, str | None]:
    for name in names:
        value = env.get(name, "").strip()
        if value.lstrip("-").isdigit():
            return int(value), name
    return None, None


def _argument(cmdline: str, key: str) -> tuple[int | None, str | None]:
    """An integer the command line passes for `key` (rank, local_rank, world_size), and the text."""
    for pattern in process_signatures()["arguments_re"].get(key, []):
        m = pattern.search(cmdline)
        if m:
            return int(m.group(1)), m.group(0).strip()
    return None, None


def describe(pid: int, env: Mapping[str, str]) -> ProcInfo:
    """What one process is, from its command line and rank variables alone."""
    sig = process_signatures()
    cmd = _cmdline(pid)
    rank, var = _first_int(env, sig["rank"])
    source = f"{var} in its environment" if var else None
    if rank is None:
        rank, arg = _argument(cmd, "rank")
        var, source = (None, None) if rank is None else ("argument", f"argument '{arg}' on its command line")
    local_rank = _first_int(env, sig["local_rank"])[0]
    world_size = _first_int(env, sig["world_size"])[0]
    info = ProcInfo(pid=pid, ppid=_ppid(pid), cmdline=cmd, env=env, rank=rank, rank_var=var,
                    local_rank=local_rank if local_rank is not None else _argument(cmd, "local_rank")[0],
                    world_size=world_size if world_size is not None else _argument(cmd, "world_size")[0],
                    local_world_size=_first_int(env, sig["local_world_size"])[0], rank_source=source,
                    node_rank=_first_int(env, sig["node_rank"])[0],
                    spawned=bool(sig["spawned_child_re"].search(cmd)))
    launcher = _is_launcher(cmd)
    if launcher:
        return _replace(info, role="launcher", launcher=launcher)
    if sig["never_ranks_re"].search(cmd):
        return _replace(info, role="worker", rank=None)
    if any(h["re"].search(cmd) for h in sig["helpers"]):
        return _replace(info, role="worker")
    return info if rank is not None else _replace(info, role="other")


def _replace(info: ProcInfo, **changes: Any) -> ProcInfo:
    return ProcInfo(**{**info.__dict__, **changes})


def _classify(kind: str, ident: str, pids: list[int], environs: _EnvironScan) -> Job:
    infos = {p: describe(p, environs.get(p)) for p in pids}
    infos = {p: i for p, i in infos.items() if i.cmdline or i.env}
    job = Job(kind=kind, id=ident)
    anc = {p: _ancestors(p, infos) for p in infos}
    infos = rankid.assign(infos, anc, process_signatures())
    candidates = {p for p, i in infos.items() if i.role == "rank"}
    spawners = {c for c in candidates for d in candidates if c in anc[d] and infos[c].rank_var != rankid.STARTER
                and (infos[d].rank, infos[d].rank_var) != (infos[c].rank, infos[c].rank_var)}
    candidates -= spawners
    for pid in sorted(infos):
        info = infos[pid]
        owner = next((a for a in anc[pid] if a in candidates and (info.role != "rank" or info.rank == infos[a].rank)),
                     None)  # a helper of a rank carries the rank's own variables, or none
        if pid in spawners:
            job.launchers.append(_replace(info, role="launcher", launcher="launcher process"))
        elif owner is not None and info.role != "launcher":
            job.workers.append(_replace(info, role="worker", parent_pid=owner))
        elif info.role == "rank":
            job.ranks.append(info)
        elif info.role == "launcher":
            job.launchers.append(info)
    job.ranks = sorted(rankid.confirm_rank0(job.ranks), key=lambda i: (i.rank if i.rank is not None else -1, i.pid))
    rank_of = {i.pid: (i.rank if i.rank is not None else -1) for i in job.ranks}
    job.workers.sort(key=lambda w: (rank_of.get(w.parent_pid or -1, -1), w.pid))  # grouped by their rank
    _expected(job)
    return job


def _ancestors(pid: int, infos: Mapping[int, ProcInfo]) -> list[int]:
    out, cur = [], infos[pid].ppid
    while cur in infos and cur not in out:
        out.append(cur)
        cur = infos[cur].ppid
    return out


def _expected(job: Job) -> None:
    """World size, and the ranks that should run here (or elsewhere) but were not found."""
    sizes = Counter(i.world_size for i in job.ranks if i.world_size)
    if not sizes:
        return
    job.world_size = sizes.most_common(1)[0][0]
    seen = {i.rank for i in job.ranks}
    local = _local_expected(job)
    for r in range(job.world_size):
        if r in seen:
            continue
        (job.missing if local is None or r in local else job.elsewhere).append(r)
    if job.elsewhere:
        job.notes.append(f"ranks {_span(job.elsewhere)} run on other hosts; probe them there (srun --overlap)")


def _local_expected(job: Job) -> set[int] | None:
    """Ranks expected on this host, or None when every rank is expected here."""
    lws = Counter(i.local_world_size for i in job.ranks if i.local_world_size).most_common(1)
    if not lws or lws[0][0] >= (job.world_size or 0):
        return None
    bases = Counter(i.rank - i.local_rank for i in job.ranks
                    if i.rank is not None and i.local_rank is not None).most_common(1)
    if not bases:
        return None
    return set(range(bases[0][0], bases[0][0] + lws[0][0]))


def _span(ranks: list[int]) -> str:
    return ",".join(str(r) for r in ranks) if len(ranks) < 4 else f"{ranks[0]}-{ranks[-1]}"


def relabel_from_locals(job: Job, threads_by_pid: Mapping[int, list[dict[str, Any]]], library: Any) -> dict[int, int]:
    """Ranks known only by start order or the store, settled by py-spy locals; returns {old rank: new rank}.

    Changes `job` in place; nothing changes unless the locals name a distinct rank for every such process.
    """
    weak = [i for i in job.ranks if i.rank_var in (rankid.ORDER, "store")]
    if not weak:
        return {}
    found = rankid.ranks_from_locals({i.pid: threads_by_pid.get(i.pid, []) for i in weak},
                                     process_signatures(), library)
    if set(found) != {i.pid for i in weak} or {r for r, _ in found.values()} & {
            i.rank for i in job.ranks if i not in weak}:
        return {}
    moved = {i.rank: found[i.pid][0] for i in weak if i.rank is not None}
    job.ranks = sorted((_replace(i, rank=found[i.pid][0], rank_source=found[i.pid][1], rank_var="py-spy locals")
                        if i.pid in found else i for i in job.ranks), key=lambda i: (i.rank or 0, i.pid))
    return {old: new for old, new in moved.items() if old != new}


def identified_line(job: Job) -> str:
    """How each rank was identified, in one line (ranks grouped by the kind of source)."""
    groups: dict[str, list[ProcInfo]] = {}
    for info in job.ranks:
        groups.setdefault(info.rank_var or "?", []).append(info)
    parts = []
    for infos in groups.values():
        ranks = sorted(i.rank for i in infos if i.rank is not None)
        if len(infos) == 1 or infos[0].rank_var in process_signatures()["rank"]:
            parts.append(f"rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}: {infos[0].rank_source}")
        else:
            parts.extend(f"rank {i.rank}: {i.rank_source}" for i in infos[:4])
            parts += [f"... ({len(infos) - 4} more the same way)"] if len(infos) > 4 else []
    return "ranks identified by " + "; ".join(parts)
