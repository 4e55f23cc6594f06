"""Evidence from torch when the training script already imported it (never imports torch).

Everything goes through `sys.modules`; every call is guarded, so a missing or different
torch yields less evidence, never an error.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

from diagnose.hook.collect import Evidence, make

EMITS_SIGNATURES = frozenset({"hook_dataloader_state"})
FR_DUMPS = ("_dump_fr_trace_json", "_dump_nccl_trace_json")
_DATALOADER_ITER = "_MultiProcessingDataLoaderIter"


def _initialized_dist() -> Any:
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist
    except Exception:
        pass
    return None


def process_groups(rank: int | None) -> list[Evidence]:
    """ProcessGroup of the default group (and of named groups torch knows the ranks of)."""
    dist = _initialized_dist()
    if dist is None:
        return []
    out = [make("process_group", rank, "torch.distributed", f"default group of {dist.get_world_size()} ranks",
                id="0", members=list(range(dist.get_world_size())))]
    try:
        world = dist.distributed_c10d._world
        for pg, ranks in list(world.pg_group_ranks.items())[:64]:
            name = world.pg_names.get(pg)
            if name and name != "0" and pg is not dist.group.WORLD:
                out.append(make("process_group", rank, "torch.distributed", f"group {name}",
                                id=str(name), members=sorted(int(r) for r in ranks)))
    except Exception:
        pass
    return out


def flight_recorder(rank: int | None) -> list[Evidence]:
    """CollectiveState per process group from the flight recorder's in-process JSON dump."""
    if _initialized_dist() is None:
        return []
    c10d = sys.modules.get("torch._C._distributed_c10d")
    dump = next((getattr(c10d, n) for n in FR_DUMPS if c10d is not None and hasattr(c10d, n)), None)
    if dump is None:
        return []
    try:
        raw = dump()
        data = json.loads(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw)
    except Exception:
        return []
    return collective_states(data, rank)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def collective_states(data: dict[str, Any], rank: int | None) -> list[Evidence]:
    """Turn a flight-recorder dump (dict) into one CollectiveState per process group."""
    last_entry: dict[str, dict[str, Any]] = {}
    for entry in data.get("entries") or []:
        pg = entry.get("process_group") or [str(entry.get("pg_id", "0"))]
        if not entry.get("is_p2p"):
            last_entry[str(pg[0])] = entry
    out: list[Evidence] = []
    for pg_id, status in (data.get("pg_status") or {}).items():
        enqueued = _as_int(status.get("last_enqueued_collective"))
        completed = _as_int(status.get("last_completed_collective"))
        entry = last_entry.get(str(pg_id), {})
        op = str(entry.get("profiling_name") or "").split(":")[-1] or None
        done = enqueued is not None and completed is not None and completed >= enqueued
        state = "completed" if done else str(entry.get("state") or "scheduled")
        sizes = entry.get("input_sizes")
        dtypes = entry.get("input_dtypes")
        text = (f"flight recorder pg {pg_id}: last enqueued #{enqueued}, last completed #{completed}"
                + (f", last op {op} #{entry.get('collective_seq_id')} {state}" if op else "")
                + (f", input sizes {json.dumps(sizes)}" if sizes else ""))
        out.append(make("collective_state", rank, "flight_recorder", text, process_group=str(pg_id), op=op,
                        seq=_as_int(entry.get("collective_seq_id")),
                        state=state if state in ("scheduled", "started", "completed") else "scheduled",
                        last_enqueued=enqueued, last_completed=completed,
                        shape=_numel(sizes),
                        dtype=",".join(map(str, dtypes)) if dtypes else None))
    return out


def _numel(sizes: Any) -> str | None:
    """Elements of a collective's inputs, as the engine reads `CollectiveState.shape` (a number)."""
    try:
        total = 0
        for dims in sizes or []:
            count = 1
            for dim in dims:
                count *= int(dim)
            total += count
        return str(total) if sizes else None
    except (TypeError, ValueError):
        return None


def cuda_memory(rank: int | None, oom: dict[str, Any]) -> list[Evidence]:
    """MemoryState per CUDA device when torch.cuda is initialized; else the OOM message's figures."""
    cuda = sys.modules.get("torch.cuda")
    out: list[Evidence] = []
    try:
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            for dev in range(min(cuda.device_count(), 16)):
                out.append(_device_state(cuda, dev, rank, oom))
    except Exception:
        pass
    if not out and str(oom.get("device", "")).startswith("cuda"):
        used = oom.get("in_use") or (oom["total"] - oom["free"] if "total" in oom and "free" in oom else None)
        out.append(make("memory_state", rank, "exception", "figures from the out-of-memory message",
                        device=oom["device"], used_bytes=used, total_bytes=oom.get("total"),
                        requested_bytes=oom.get("requested")))
    return out


def _device_state(cuda: Any, dev: int, rank: int | None, oom: dict[str, Any]) -> Evidence:
    reserved = cuda.memory_reserved(dev)
    allocated = cuda.memory_allocated(dev)
    peak = cuda.max_memory_allocated(dev)
    free, total = cuda.mem_get_info(dev)
    device = f"cuda:{dev}"
    requested = oom.get("requested") if oom.get("device") in (device, "cuda") else None
    text = (f"{device}: allocated {allocated / 2**20:.0f} MiB, reserved {reserved / 2**20:.0f} MiB, "
            f"peak {peak / 2**20:.0f} MiB, device in use {(total - free) / 2**20:.0f} of {total / 2**20:.0f} MiB")
    return make("memory_state", rank, "torch.cuda", text, device=device, used_bytes=int(total - free),
                total_bytes=int(total), requested_bytes=requested)


def dataloader_workers(frames: list[types.FrameType], rank: int | None) -> list[Evidence]:
    """State of multiprocessing DataLoader workers reachable from the given frames."""
    for frame in frames:
        it = frame.f_locals.get("self") if frame.f_code.co_filename.endswith("dataloader.py") else None
        if it is not None and type(it).__name__ == _DATALOADER_ITER:
            return [_workers_state(it, rank)]
    return []


def _workers_state(it: Any, rank: int | None) -> Evidence:
    workers = list(getattr(it, "_workers", []) or [])
    alive = [w.pid for w in workers if _safe(w.is_alive)]
    dead = {str(w.pid): w.exitcode for w in workers if w.pid not in alive}
    fields = {"workers": len(workers), "alive": len(alive), "dead": len(dead),
              "exitcodes": json.dumps(dead), "outstanding": getattr(it, "_tasks_outstanding", -1)}
    text = f"dataloader: {len(alive)}/{len(workers)} workers alive" + (f", exit codes {dead}" if dead else "")
    return make("log_line", rank, "dataloader", text, signature="hook_dataloader_state", fields=fields)


def _safe(fn: Any) -> bool:
    try:
        return bool(fn())
    except Exception:
        return False


def frames_of(tb: types.TracebackType | None) -> list[types.FrameType]:
    """The frames of a traceback, innermost first."""
    out = []
    while tb is not None:
        out.append(tb.tb_frame)
        tb = tb.tb_next
    return out[::-1]
