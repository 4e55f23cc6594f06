"""Environment checks of `diagnose preflight`: NCCL/Gloo interfaces, IB, world size, GPUs per node, versions.

Versions come from installed package metadata: torch is never imported.
"""

from __future__ import annotations

import importlib.metadata as md
import platform
from collections import Counter
from pathlib import Path

import psutil

from diagnose.evidence import HostCheck
from diagnose.probes.preflight.host import ib_devices
from diagnose.probes.preflight.settings import Settings, config, make_check


def interfaces() -> dict[str, bool]:
    """Network interface name -> whether it is up (psutil, completed from /sys/class/net)."""
    stats = {name: st.isup for name, st in psutil.net_if_stats().items()}
    net = Path("/sys/class/net")
    for p in net.iterdir() if net.is_dir() else []:
        stats.setdefault(p.name, False)
    return stats


def matching_interfaces(spec: str, names: list[str]) -> list[str]:
    """Interfaces NCCL would use for an ``*_SOCKET_IFNAME`` value (prefixes, ``=`` exact, ``^`` exclude)."""
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    items = [i.strip() for i in (body[1:] if exact else body).split(",") if i.strip()]

    def hit(name: str) -> bool:
        return any(name == i if exact else name.startswith(i) for i in items)

    return [n for n in names if hit(n) != exclude]


def ifname_check(s: Settings, var: str) -> HostCheck:
    """``NCCL_SOCKET_IFNAME`` / ``GLOO_SOCKET_IFNAME`` names an interface of this host that is up."""
    name = var.lower()
    spec = s.env.get(var, "").strip()
    if not spec:
        return make_check(name, "pass", f"{var} unset: the library picks an interface")
    ifs = interfaces()
    matched = matching_interfaces(spec, sorted(ifs))
    up = [n for n in matched if ifs[n]]
    if up:
        return make_check(name, "pass", f"{var}={spec} matches {', '.join(up)} (up)", value=spec, source=var)
    why = f"matches only {', '.join(matched)}, which is down" if matched else "matches no interface"
    return make_check(name, "fail", f"{var}={spec} {why} (this host has {', '.join(sorted(ifs))})",
                      value=f"{var}={spec}", limit=",".join(sorted(ifs)), source=var)


def ib_disable_check(s: Settings) -> HostCheck:
    """NCCL_IB_DISABLE=1 on a host that has InfiniBand (NCCL then falls back to TCP sockets)."""
    value = s.env.get("NCCL_IB_DISABLE", "").strip()
    ib = ib_devices()
    if value != "1":
        return make_check("nccl_ib_disable", "pass", f"NCCL_IB_DISABLE {value or 'unset'}"
                          + (f"; InfiniBand: {', '.join(ib)}" if ib else "; no InfiniBand device"))
    return make_check("nccl_ib_disable", "fail" if ib else "pass",
                      f"NCCL_IB_DISABLE=1 with InfiniBand present ({', '.join(ib)})" if ib
                      else "NCCL_IB_DISABLE=1 and no InfiniBand device here", value=", ".join(ib) or "none",
                      source="NCCL_IB_DISABLE")


def world_size_check(s: Settings) -> HostCheck:
    """WORLD_SIZE equals nodes x processes per node, when all three are known."""
    ws = s.env.get("WORLD_SIZE", "").strip()
    if not ws.isdigit() or s.nnodes is None or s.nproc is None:
        return make_check("world_size", "skip", "needs WORLD_SIZE, the node count and processes per node "
                          f"(WORLD_SIZE {ws or 'unset'}, nodes {s.nnodes}, processes per node {s.nproc})")
    want = s.nnodes * s.nproc
    detail = (f"WORLD_SIZE={ws}, {s.nnodes} node(s) [{s.source('nnodes')}] x {s.nproc} process(es) per node "
              f"[{s.source('nproc')}] = {want}")
    return make_check("world_size", "pass" if int(ws) == want else "fail", detail, value=int(ws), limit=want,
                      source="WORLD_SIZE")


def visible_gpus(s: Settings) -> tuple[list[str] | None, str]:
    """The GPUs the ranks will see (CUDA_VISIBLE_DEVICES, else the driver's list), or None when unknown."""
    cvd = s.env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        return [d.strip() for d in cvd.split(",") if d.strip() and d.strip() != "-1"], "CUDA_VISIBLE_DEVICES"
    root = Path(config()["gpu"]["procfs"])
    return (sorted(p.name for p in root.iterdir()), "nvidia driver") if root.is_dir() else (None, "")


def gpu_count_check(s: Settings) -> HostCheck:
    """One GPU per process: no more processes per node than visible GPUs, no GPU listed twice."""
    gpus, src = visible_gpus(s)
    if gpus is None:
        return make_check("gpu_count", "skip", "no NVIDIA GPU on this host (CPU run?)")
    if not gpus:
        return make_check("gpu_count", "skip", f"{src} hides every GPU (CPU run?)", value=0)
    dup = sorted(d for d, n in Counter(gpus).items() if n > 1)
    if dup:
        return make_check("gpu_count", "fail", f"{src} lists GPU(s) {', '.join(dup)} twice: two ranks would share "
                          "a device", value=len(set(gpus)), limit=s.nproc or len(gpus), source=src)
    if s.nproc is None:
        return make_check("gpu_count", "pass", f"{len(gpus)} GPU(s) visible ({src}); processes per node unknown",
                          value=len(gpus), source=src)
    ok = s.nproc <= len(gpus)
    return make_check("gpu_count", "pass" if ok else "fail",
                      f"{s.nproc} process(es) per node [{s.source('nproc')}], {len(gpus)} GPU(s) visible ({src})",
                      value=len(gpus), limit=s.nproc, source=src)


def versions() -> dict[str, str]:
    """python, torch and NCCL versions of this interpreter's environment (package metadata only)."""
    out = {"python": platform.python_version()}
    for key, names in (("torch", ["torch"]), ("nccl", config()["versions"]["nccl_packages"])):
        for name in names:
            try:
                out[key] = md.version(name)
                break
            except md.PackageNotFoundError:
                continue
    return out


def versions_check() -> HostCheck:
    """The versions this node would run (compared across nodes by the Slurm fan-out)."""
    found = versions()
    text = " ".join(f"{k}={v}" for k, v in sorted(found.items()))
    if "torch" not in found:
        return make_check("versions", "skip", f"torch is not installed for this python ({text}): run preflight "
                          "with the training environment's python", value=text, source="package metadata")
    return make_check("versions", "pass", text, value=text, source="package metadata")


def env_checks(s: Settings) -> list[HostCheck]:
    """Every environment check, in checklist order."""
    return [ifname_check(s, "NCCL_SOCKET_IFNAME"), ifname_check(s, "GLOO_SOCKET_IFNAME"), ib_disable_check(s),
            world_size_check(s), gpu_count_check(s), versions_check()]
