"""Pre-launch host checks of `diagnose preflight`: rendezvous port, leftover processes, /dev/shm, limits, threads.

Each check becomes one `HostCheck` (pass / fail / skip, with the fix). Thresholds, variable names and
fixes are data (``rules/signatures/preflight/checks.yaml``). Nothing here connects anywhere: the port
test only binds (never listens) on this host, every other check reads /proc, /sys or the limits.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Mapping
from typing import Any

import psutil

from diagnose.evidence import HostCheck
from diagnose.probes.live.discovery import read_environ
from diagnose.probes.preflight import env as preflight_env
from diagnose.probes.preflight import host as preflight_host
from diagnose.probes.preflight.settings import Settings, config, make_check, settings


def bind_error(addr: str, port: int) -> str | None:
    """None when ``addr:port`` can be bound now (as TCPStore binds it: SO_REUSEADDR, no listen), else why not."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((addr, port))
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc)) + (f" ({exc.strerror})" if exc.strerror else "")
    return None


def port_holders(port: int) -> list[tuple[int | None, str]]:
    """(pid, command line) of the processes with a TCP socket bound to ``port`` on this host."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.Error:
        conns = []
    seen: dict[int | None, str] = {}
    for c in conns:
        if c.laddr and c.laddr.port == port and (c.status == psutil.CONN_LISTEN or not c.raddr):
            seen.setdefault(c.pid, _cmdline(c.pid))
    return list(seen.items())


def _cmdline(pid: int | None) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())[:120] if pid else "unknown process"
    except psutil.Error:
        return "process gone"


def _is_rank_like(env: Mapping[str, str], cmdline: str) -> bool:
    cfg = config()
    return any(k in env for k in cfg["rank_markers"]) or bool(re.search(cfg["rank_cmdline"], cmdline))


def _holders_text(items: list[tuple[int | None, str]]) -> str:
    return ", ".join(f"pid {p} {c}" for p, c in items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def port_checks(s: Settings) -> list[HostCheck]:
    """rdzv_port, master_addr_bind and leftover_ports."""
    port, src = s.port, s.source("port")
    if port is None:
        return [make_check("rdzv_port", "skip", "no rendezvous port known")]
    err = bind_error("0.0.0.0", port)  # the any-address overlaps every IPv4 listener on the port
    holders = port_holders(port) if err else []
    who = _holders_text(holders) or "holder not visible"
    out = [make_check("rdzv_port", "fail" if err else "pass",
                      f"port {port} (from {src}) is taken on this host: {err}; {who}" if err
                      else f"port {port} (from {src}) is free on this host", value=port, source="bind test",
                      port=port, holders=who)]
    out.append(_master_bind(s, port))
    leftovers = [(p, c) for p, c in holders if p and p != os.getpid() and _is_rank_like(read_environ(p), c)]
    out.append(make_check("leftover_ports", "fail" if leftovers else "pass",
                          f"training process(es) of an earlier run hold port {port}: {_holders_text(leftovers)}"
                          if leftovers else f"no training process holds port {port}",
                          value=len(leftovers), limit=0, source="psutil.net_connections", port=port,
                          holders=_holders_text(leftovers)))
    return out


def local_addresses() -> dict[str, list[str]]:
    """Interface name -> its IPv4/IPv6 addresses (no scope suffix)."""
    out: dict[str, list[str]] = {}
    for name, addrs in psutil.net_if_addrs().items():
        out[name] = [a.address.split("%")[0] for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)]
    return out


def _master_bind(s: Settings, port: int) -> HostCheck:
    addr = s.master_addr
    if not addr:
        return make_check("master_addr_bind", "skip", "MASTER_ADDR unset (set by the launcher)")
    host = socket.gethostname()
    mine = {a for addrs in local_addresses().values() for a in addrs}
    ip = "127.0.0.1" if addr == "localhost" else addr if addr in mine else None
    if ip is None and addr in (host, host.split(".")[0]):
        ip = "0.0.0.0"
    if ip is None:
        return make_check("master_addr_bind", "skip", f"MASTER_ADDR {addr} is not this host: not tested "
                          "(preflight connects to nothing off this host)", value=addr)
    err = bind_error(ip, port)
    return make_check("master_addr_bind", "fail" if err else "pass",
                      f"cannot bind {ip}:{port} for MASTER_ADDR {addr}: {err}" if err
                      else f"MASTER_ADDR {addr} is this host; {ip}:{port} is bindable", value=ip, source="bind test",
                      port=port)


def _ancestors() -> set[int]:
    out, proc = {os.getpid()}, psutil.Process()
    for parent in proc.parents():
        out.add(parent.pid)
    return out


def leftover_run_check(s: Settings) -> HostCheck:
    """Rank or agent processes still running: same run id, or (same user, same Slurm job when in one)."""
    own, uid, job = _ancestors(), os.getuid(), s.env.get("SLURM_JOB_ID")
    found: list[tuple[int | None, str]] = []
    for proc in psutil.process_iter(["pid", "uids", "status"]):
        info = proc.info
        if info["pid"] in own or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        env = read_environ(info["pid"])
        if not env:
            continue
        same_run = bool(s.run_id) and env.get("TORCHELASTIC_RUN_ID") == s.run_id
        mine = info["uids"] is not None and info["uids"].real == uid and (job is None or env.get("SLURM_JOB_ID") == job)
        if same_run or (mine and _is_rank_like(env, _cmdline(info["pid"]))):
            found.append((info["pid"], _cmdline(info["pid"])))
    scope = f"run id {s.run_id}, " if s.run_id else ""
    scope += f"Slurm job {job}" if job else "this user"
    return make_check("leftover_run", "fail" if found else "pass",
                      f"{len(found)} rank/agent process(es) of an earlier run still running ({scope}): "
                      f"{_holders_text(found)}" if found else f"no rank or agent process left over ({scope})",
                      value=len(found), limit=0, source="/proc/*/environ", holders=_holders_text(found))


def leftover_gpu_check() -> HostCheck:
    """Processes holding GPU memory (nvidia-smi), skipped where nvidia-smi is absent."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return make_check("leftover_gpu", "skip", "nvidia-smi not found: GPU leftovers not checked")
    cmd = [exe, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False,
                             timeout=config()["gpu"]["nvidia_smi_timeout_s"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return make_check("leftover_gpu", "skip", f"nvidia-smi failed: {exc}")
    if out.returncode != 0:
        return make_check("leftover_gpu", "skip", f"nvidia-smi exit {out.returncode}: {out.stderr.strip()[:120]}")
    rows = [r.split(", ") for r in out.stdout.splitlines() if r.strip()]
    apps = [(int(r[0]) if r[0].isdigit() else None, " ".join(r[1:])) for r in rows]
    apps = [a for a in apps if a[0] != os.getpid()]
    return make_check("leftover_gpu", "fail" if apps else "pass",
                      f"{len(apps)} process(es) hold GPU memory: {_holders_text(apps)}" if apps
                      else "no process holds GPU memory", value=len(apps), limit=0, source="nvidia-smi",
                      holders=_holders_text(apps))


def collect(port: int | None = None, nproc: int | None = None, workers: int | None = None,
            env: Mapping[str, str] | None = None) -> tuple[list[HostCheck], Settings]:
    """Run every check of this host, in checklist order; a check that crashes becomes a skip."""
    s = settings(port, nproc, workers, env)
    steps: list[tuple[str, Any]] = [
        ("rdzv_port", lambda: port_checks(s)), ("leftover_run", lambda: [leftover_run_check(s)]),
        ("leftover_gpu", lambda: [leftover_gpu_check()]), ("dev_shm_size", preflight_host.shm_checks),
        ("memlock", preflight_host.limit_checks), ("cpu_threads", lambda: [preflight_host.cpu_check(s)]),
        ("env", lambda: preflight_env.env_checks(s))]
    out: list[HostCheck] = []
    for name, step in steps:
        try:
            out.extend(step())
        except Exception as exc:  # noqa: BLE001 - a failed probe is evidence, not a crash
            out.append(make_check(name, "skip", f"check failed to run: {type(exc).__name__}: {exc}"))
    return out, s
