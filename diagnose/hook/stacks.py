"""Classify a Python stack into what the thread was doing (standard library only).

A frame is ``(filename, lineno, function, source_line)``; stacks are innermost first.
The tables below map library frames to the activities of `StackSample`.
"""

from __future__ import annotations

import linecache
import os
import sys
import types
from collections.abc import Sequence

from diagnose.hook.patterns import pattern
from diagnose.probes.live import flow

Frame = tuple[str, int, str, str]

COLLECTIVES = frozenset({
    "all_reduce", "all_reduce_coalesced", "all_reduce_multigpu", "broadcast", "broadcast_object_list",
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_gather_coalesced",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "reduce",
    "gather", "gather_object", "scatter", "scatter_object_list", "send", "recv", "isend",
    "irecv", "batch_isend_irecv", "send_object_list", "recv_object_list",
})
BARRIERS = frozenset({"barrier", "monitored_barrier", "_store_based_barrier"})
RENDEZVOUS_FUNCS = frozenset({"init_process_group", "_new_process_group_helper", "new_group",
                              "_create_c10d_store", "rendezvous", "next_rendezvous", "init_device_mesh"})
# (path fragment, activity), checked in order when the function tables above do not decide
PATH_ACTIVITIES: tuple[tuple[str, str], ...] = (
    ("torch/distributed/elastic/rendezvous/", "rendezvous"),
    ("torch/distributed/rendezvous.py", "rendezvous"),
    ("torch/distributed/checkpoint/", "checkpoint_io"),
    ("torch/serialization.py", "checkpoint_io"),
    ("torch/utils/data/", "data_loading"),
    ("torch/autograd/", "backward"),
)
C10D_FILES = ("torch/distributed/distributed_c10d.py", "torch/distributed/c10d_logger.py")
_LIBRARY_MARKERS = ("site-packages", "dist-packages", os.sep + "lib" + os.sep + "python")


def short_path(filename: str) -> str:
    """Path relative to site-packages for library files (as py-spy prints them), else as is."""
    for marker in ("site-packages/", "dist-packages/"):
        idx = filename.rfind(marker)
        if idx >= 0:
            return filename[idx + len(marker):]
    return filename


def is_user_frame(filename: str) -> bool:
    """A frame of the training script rather than of a library or of the interpreter."""
    if filename.startswith("<") or "diagnose/hook/" in filename.replace(os.sep, "/"):
        return False
    return not any(m in filename for m in _LIBRARY_MARKERS)


def frames_from_traceback(tb: types.TracebackType | None, limit: int = 64) -> list[Frame]:
    """Frames of a traceback, innermost first."""
    out: list[Frame] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        out.append((code.co_filename, tb.tb_lineno, code.co_name, ""))
        tb = tb.tb_next
    out.reverse()
    return [_with_line(f) for f in out[:limit]]


def frames_from_frame(frame: types.FrameType | None, limit: int = 64) -> list[Frame]:
    """Frames of a live thread from its innermost frame outwards."""
    out: list[Frame] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append(_with_line((code.co_filename, frame.f_lineno or 0, code.co_name, "")))
        frame = frame.f_back
    return out


def _with_line(frame: Frame) -> Frame:
    try:
        line = linecache.getline(frame[0], frame[1]).strip()
    except Exception:
        line = ""
    return (frame[0], frame[1], frame[2], line)


def _library_activity(frame: Frame) -> tuple[str, str | None] | None:
    path = frame[0].replace(os.sep, "/")
    name = frame[2]
    if any(path.endswith(f) for f in C10D_FILES):
        if name in COLLECTIVES:
            return "collective", name
        if name in BARRIERS:
            return "barrier", None
        if name in RENDEZVOUS_FUNCS:
            return "rendezvous", None
        return None
    for fragment, activity in PATH_ACTIVITIES:
        if fragment in path:
            return activity, None
    if path.endswith("torch/_tensor.py") and name == "backward":
        return "backward", None
    if path.endswith("/threading.py") and name in ("wait", "join", "_wait_for_tstate_lock"):
        return "idle", None
    return None


def classify(frames: Sequence[Frame], wchan: str | None = None) -> tuple[str, str | None, str | None]:
    """(activity, collective op, user call site 'file:line') of a stack, innermost first."""
    user = next((f for f in frames if is_user_frame(f[0])), None)
    call_site = f"{user[0]}:{user[1]}" if user else None
    for frame in frames:
        found = _library_activity(frame)
        if found:
            return found[0], found[1], call_site
    if wchan and "sleep" in wchan:
        return "sleeping", None, call_site
    if frames and pattern("sleep_call").search(frames[0][3] or ""):
        return "sleeping", None, call_site
    if any(pattern("eval_function").search(f[2]) for f in frames if is_user_frame(f[0])):
        return "evaluation", None, call_site
    return ("user_code" if user else "unknown"), None, call_site


def exits(frames: Sequence[Frame], limit: int = 40) -> dict[str, int]:
    """'file:line' of user frames whose block goes on to a continue/break/return/raise (its line)."""
    out: dict[str, int] = {}
    for filename, line, _, _ in frames[:limit]:
        if is_user_frame(filename) and line:
            after = flow.exit_after(filename, line)
            if after is not None:
                out[f"{short_path(filename)}:{line}"] = after
    return out


def render(frames: Sequence[Frame], limit: int = 40) -> tuple[str, ...]:
    """'func (file:line)' strings, innermost first."""
    return tuple(f"{f[2]} ({short_path(f[0])}:{f[1]})" for f in frames[:limit])


def thread_wchan(native_id: int | None) -> str | None:
    """Kernel wait channel and state of one of this process's threads (Linux), e.g. 'hrtimer_nanosleep S'."""
    if not native_id:
        return None
    base = f"/proc/self/task/{native_id}"
    try:
        with open(f"{base}/wchan", encoding="ascii", errors="replace") as fh:
            wchan = fh.read(128).strip()
        with open(f"{base}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read(512)
        state = stat[stat.rfind(")") + 2:].split(" ", 1)[0]
    except OSError:
        return None
    return f"{wchan or '-'} {state}".strip()


def current_stacks() -> dict[int, list[Frame]]:
    """Every thread's stack right now (thread ident -> frames, innermost first)."""
    return {ident: frames_from_frame(frame) for ident, frame in sys._current_frames().items()}
