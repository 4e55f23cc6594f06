"""Host checks of `diagnose preflight`: /dev/shm, memlock and open-files limits, CPU threads vs cores."""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Mapping
from pathlib import Path

from diagnose.evidence import HostCheck
from diagnose.probes.preflight.settings import Settings, config, first_env, make_check


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def shm_checks() -> list[HostCheck]:
    """dev_shm_size (present, writable, big enough) and dev_shm_free."""
    cfg = config()["dev_shm"]
    path = cfg["path"]
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return [make_check("dev_shm_size", "fail", f"{path} is missing: {exc.strerror}", value="missing",
                           limit=_size(cfg["min_total_bytes"]), source=path)]
    total, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    writable = os.access(path, os.W_OK)
    ok = total >= cfg["min_total_bytes"] and writable
    return [make_check("dev_shm_size", "pass" if ok else "fail",
                       f"{path} is {_size(total)}" + ("" if writable else ", not writable")
                       + f" (need {_size(cfg['min_total_bytes'])})", value=_size(total),
                       limit=_size(cfg["min_total_bytes"]), source=path),
            make_check("dev_shm_free", "pass" if free >= cfg["min_free_bytes"] else "fail",
                       f"{path} has {_size(free)} free (need {_size(cfg['min_free_bytes'])})",
                       value=_size(free), limit=_size(cfg["min_free_bytes"]), source=path)]


def ib_devices() -> list[str]:
    """InfiniBand/RoCE devices of this host (empty when none)."""
    root = Path(config()["ib"]["sysfs"])
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def limit_checks() -> list[HostCheck]:
    """memlock (needed unlimited where RDMA is used) and the open-files limit."""
    def show(v: int) -> str:
        return "unlimited" if v == resource.RLIM_INFINITY else _size(v)

    cfg = config()
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    need = cfg["memlock"]["min_bytes_with_ib"]
    need_v = resource.RLIM_INFINITY if need < 0 else need
    ib = ib_devices()
    enough = soft == resource.RLIM_INFINITY or (need_v != resource.RLIM_INFINITY and soft >= need_v)
    mem = make_check("memlock", "fail" if ib and not enough else "pass",
                     f"memlock limit {show(soft)}" + (f", InfiniBand present ({', '.join(ib)}): need {show(need_v)}"
                                                      if ib else " (no InfiniBand here: only RDMA needs more)"),
                     value=show(soft), limit=show(need_v), source="RLIMIT_MEMLOCK")
    nsoft, nhard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nmin = cfg["nofile"]["min_soft"]
    ok = nsoft == resource.RLIM_INFINITY or nsoft >= nmin
    nofile = make_check("nofile", "pass" if ok else "fail",
                        f"open-files limit {nsoft} (hard {nhard}; need {nmin})", value=nsoft, limit=nmin,
                        source="RLIMIT_NOFILE")
    return [mem, nofile]


def cpu_budget(env: Mapping[str, str]) -> tuple[int, str]:
    """Cores this job may use: the least of cpu_count, affinity, cgroup quota and SLURM_CPUS_ON_NODE."""
    limits = {"os.cpu_count": os.cpu_count() or 1, "affinity": len(os.sched_getaffinity(0))}
    quota = _cgroup_quota()
    if quota:
        limits["cgroup quota"] = max(1, math.ceil(quota))
    text, var = first_env(env, "cpus")
    if text and text.isdigit() and var:
        limits[var] = int(text)
    name = min(limits, key=lambda k: limits[k])
    return limits[name], name


def _cgroup_quota() -> float | None:
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        base = Path("/sys/fs/cgroup/cpu")
        q, p = int((base / "cpu.cfs_quota_us").read_text()), int((base / "cpu.cfs_period_us").read_text())
        return q / p if q > 0 and p > 0 else None
    except (OSError, ValueError):
        return None


def cpu_check(s: Settings) -> HostCheck:
    """processes per node x (1 + dataloader workers) x OMP_NUM_THREADS against the cores available."""
    cfg = config()["cpu"]
    cores, limiter = cpu_budget(s.env)
    nproc, workers = s.nproc or 1, s.workers or 0
    omp_text = s.env.get("OMP_NUM_THREADS", "").strip()
    if omp_text.isdigit():
        omp, why = int(omp_text), f"OMP_NUM_THREADS={omp_text}"
    elif nproc > 1:
        omp, why = cfg["default_omp_under_launcher"], "OMP_NUM_THREADS unset (torchrun sets 1)"
    else:
        omp, why = cores, "OMP_NUM_THREADS unset (torch uses one thread per core)"
    threads = nproc * (1 + workers) * omp
    ratio = threads / cores
    detail = (f"{nproc} process(es) x (1 + {workers} worker(s)) x {omp} thread(s) [{why}] = {threads} threads "
              f"for {cores} core(s) ({limiter}): {ratio:.1f} per core (limit {cfg['max_threads_per_core']})")
    return make_check("cpu_threads", "fail" if ratio > cfg["max_threads_per_core"] else "pass", detail,
                      value=threads, limit=cores, source=limiter)
