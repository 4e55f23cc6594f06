"""In-process evidence as plain dicts (standard library only).

The dicts follow the schema of `diagnose.evidence` (a "kind" key and the model's
fields), so `parse_evidence` validates them where pydantic is available.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import traceback
from typing import Any

from diagnose.hook import stacks
from diagnose.hook.patterns import pattern
from diagnose.units import size_bytes

Evidence = dict[str, Any]
EMITS_SIGNATURES = frozenset({"hook_exception"})

ENV_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
             "ROLE_RANK", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
             "PYTORCH_CUDA_ALLOC_CONF", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
             "SLURM_NTASKS")
ENV_PREFIXES = ("NCCL_", "TORCH_", "TORCHELASTIC_", "GLOO_")
MAX_TEXT = 2000
MAX_TRACEBACK = 20000

_HOST = socket.gethostname()


def make(kind: str, rank: int | None, source: str, text: str | None = None, **fields: Any) -> Evidence:
    """One evidence dict with the hook's provenance; None fields are dropped."""
    item: Evidence = {"kind": kind, "rank": rank, "time": time.time(),
                      "provenance": {"probe": "hook", "source": source, "host": _HOST, "pid": os.getpid()}}
    if text is not None:
        item["text"] = text[:MAX_TEXT]
    item.update({k: v for k, v in fields.items() if v is not None})
    return {k: v for k, v in item.items() if v is not None}


def _int_env(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def rank_info() -> dict[str, Any]:
    """rank, local_rank, world_size, backend, attempt: from torch.distributed when initialized, else env."""
    info: dict[str, Any] = {"rank": _int_env("RANK"), "local_rank": _int_env("LOCAL_RANK"),
                            "world_size": _int_env("WORLD_SIZE"), "backend": None,
                            "attempt": _int_env("TORCHELASTIC_RESTART_COUNT") or 0}
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            info["rank"] = dist.get_rank()
            info["world_size"] = dist.get_world_size()
            info["backend"] = str(dist.get_backend())
    except Exception:
        pass
    if info["rank"] is None:  # a process outside any launcher is rank 0 of a world of one
        info["rank"] = 0
    return info


def env_evidence(info: dict[str, Any]) -> Evidence:
    """RankEnv: launch variables, versions, and what torch.distributed says."""
    env = {k: v for k, v in os.environ.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}
    env["python"] = sys.version.split()[0]
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch"] = str(getattr(torch, "__version__", "?"))
    for key in ("backend", "world_size", "rank"):
        if info.get(key) is not None:
            env[f"dist.{key}"] = str(info[key])
    text = " ".join(f"{k}={env[k]}" for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE") if k in env)
    return make("rank_env", info["rank"], "environment", text or None, variables=env)


def exception_chain(exc: BaseException, limit: int = 8) -> list[tuple[BaseException, str]]:
    """The exception and its causes/contexts, as Python prints them (outermost raised first)."""
    chain: list[tuple[BaseException, str]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    relation = "raised"
    while current is not None and id(current) not in seen and len(chain) < limit:
        seen.add(id(current))
        chain.append((current, relation))
        if current.__cause__ is not None:
            current, relation = current.__cause__, "cause"
        elif current.__context__ is not None and not current.__suppress_context__:
            current, relation = current.__context__, "context"
        else:
            current = None
    return chain


def format_exception(exc: BaseException) -> str:
    """The traceback text exactly as the default hook prints it."""
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:
        return f"{type(exc).__name__}: <unprintable>"


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def exception_evidence(exc: BaseException, rank: int | None, thread: str, uncaught: bool) -> list[Evidence]:
    """LogLines for the exception chain, a StackSample of where it was raised, a RankExit if fatal."""
    out: list[Evidence] = []
    full = format_exception(exc)
    for depth, (item, relation) in enumerate(exception_chain(exc)):
        last = "".join(traceback.format_exception_only(type(item), item)).strip().splitlines()
        fields: dict[str, Any] = {"type": _type_name(item), "message": str(item)[:MAX_TEXT],
                                  "depth": depth, "relation": relation, "thread": thread}
        if depth == 0:
            fields["traceback"] = full[-MAX_TRACEBACK:]
            fields["uncaught"] = uncaught
        out.append(make("log_line", rank, "exception", last[-1] if last else _type_name(item),
                        signature="hook_exception", fields=fields))
    frames = stacks.frames_from_traceback(exc.__traceback__)
    activity, op, site = stacks.classify(frames)
    out.append(make("stack_sample", rank, "exception", f"{_type_name(exc)} raised in {activity}"
                    + (f" ({op})" if op else "") + (f" at {site}" if site else ""),
                    activity=activity, op=op, call_site=site, frames=list(stacks.render(frames)),
                    thread=thread, exits=stacks.exits(frames) or None))
    if uncaught and thread == "MainThread":
        out.append(make("rank_exit", rank, "exception", f"uncaught {_type_name(exc)}: {str(exc)[:300]}",
                        exitcode=1, message=f"{_type_name(exc)}: {str(exc)[:MAX_TEXT]}"))
    return out


def _to_bytes(number: str, unit: str) -> int:
    """Bytes of an OOM figure; a unit the message spells in no known way counts as bytes."""
    got = size_bytes(number, unit)
    return int(got if got is not None else float(number))


def oom_figures(message: str) -> dict[str, Any]:
    """Figures an out-of-memory message states: device, requested, total, free, in use (bytes)."""
    if m := pattern("cpu_oom_requested").search(message):
        return {"device": "host", "requested": int(m.group(1))}
    if m := pattern("cuda_oom_tried").search(message):
        figures: dict[str, Any] = {"device": "cuda", "requested": _to_bytes(m.group(1), m.group(2))}
        if t := pattern("cuda_oom_total").search(message):
            figures.update(device=f"cuda:{t.group(1)}", total=_to_bytes(t.group(2), t.group(3)),
                           free=_to_bytes(t.group(4), t.group(5)))
        elif t := pattern("cuda_oom_total_old").search(message):
            figures.update(device=f"cuda:{t.group(1)}", total=_to_bytes(t.group(2), t.group(3)))
        if u := pattern("cuda_oom_in_use").search(message):
            figures["in_use"] = _to_bytes(u.group(1), u.group(2))
        return figures
    if "Cannot allocate memory" in message or "MemoryError" in message:
        return {"device": "host"}
    return {}


def _status_kib() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmPeak", "VmSize", "VmHWM", "VmRSS"):
                    out[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            value = fh.read(64).strip()
        return int(value) if value.isdigit() else None
    except OSError:
        return None


def _mem_total() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            return int(fh.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None


def host_memory(rank: int | None, requested: int | None = None) -> Evidence:
    """MemoryState of the host: address space against RLIMIT_AS when one is set, else RSS against RAM/cgroup."""
    status = _status_kib()
    limits: dict[str, int] = {}
    try:
        import resource  # optional dependency: resource is POSIX-only

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits["RLIMIT_AS"] = soft
    except (ImportError, OSError, ValueError):
        pass
    cgroup = _read_int("/sys/fs/cgroup/memory.max") or _read_int("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    total = _mem_total()
    if "RLIMIT_AS" in limits:
        used, limit, what = status.get("VmSize"), limits["RLIMIT_AS"], "address space"
    else:
        used, what = status.get("VmRSS"), "rss"
        limit = min([v for v in (total, cgroup) if v and v < 2**60] or [0]) or None
    parts = [f"{what} {_mib(used)}"]
    parts += [f"limit {_mib(limit)}"] if limit else []
    parts += [f"{k} {_mib(v)}" for k, v in (("peak rss", status.get("VmHWM")), ("ram", total),
                                             ("cgroup", cgroup), ("requested", requested)) if v and v < 2**60]
    return make("memory_state", rank, "/proc/self/status", ", ".join(parts), device="host",
                used_bytes=used, total_bytes=limit, requested_bytes=requested)


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**20:.0f} MiB"
