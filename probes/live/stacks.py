"""Python stacks of every rank (py-spy, in parallel, time-bounded), classified into activities.

The frame patterns are data: ``rules/signatures/live/stack_frames.yaml``.
Where py-spy is missing or ptrace is refused, the kernel wait channel stands in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import psutil
import yaml

from diagnose.evidence import Provenance, StackSample
from diagnose.output.report import Skipped
from diagnose.probes.live import flow
from diagnose.yamlload import builtin_rules_dir, pattern_table

PROBE = "stacks"
MAX_FRAMES = 40


@dataclass(frozen=True)
class Target:
    """A rank process to sample."""

    pid: int
    rank: int | None
    host: str | None = None


@dataclass
class Dump:
    """One py-spy run: the raw output, the parsed threads, or why it failed."""

    target: Target
    sample: int
    native: bool = False
    raw: str = ""
    threads: list[dict[str, Any]] | None = None
    error: str | None = None
    seconds: float = 0.0
    time: float = 0.0


@dataclass
class StackResult:
    """What the stack probe collected."""

    evidence: list[StackSample] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dumps: list[Dump] = field(default_factory=list)


@lru_cache(maxsize=1)
def frame_signatures() -> dict[str, Any]:
    """The frame classification table, with its regexes compiled."""
    data = yaml.safe_load((builtin_rules_dir() / "signatures" / "live" / "stack_frames.yaml").read_text())
    for item in data["frames"] + data["fallback"]:
        for key in ("file", "function", "wchan"):
            if key in item:
                item[f"{key}_re"] = re.compile(item[key])
    data["library_re"] = re.compile(data["library"])
    return data


def pyspy_binary() -> str | None:
    """py-spy on PATH, or next to this interpreter."""
    found = shutil.which("py-spy")
    beside = Path(sys.executable).parent / "py-spy"
    return found or (str(beside) if beside.exists() else None)


def _is_native(frame: dict[str, Any]) -> bool:
    return bool(frame.get("module")) or not str(frame.get("filename", "")).endswith(".py")


def _matches(item: dict[str, Any], frame: dict[str, Any]) -> bool:
    if "native" in item and bool(item["native"]) != _is_native(frame):
        return False
    if "file_re" in item and not item["file_re"].search(str(frame.get("filename", ""))):
        return False
    return "function_re" not in item or bool(item["function_re"].search(str(frame.get("name", ""))))


@dataclass(frozen=True)
class Activity:
    """The classified main thread of one sample."""

    activity: str
    op: str | None = None
    call_site: str | None = None
    epoch: int | None = None
    batch: int | None = None


def classify(frames: list[dict[str, Any]], wchan: str | None = None) -> Activity:
    """What a thread is doing, from its frames (innermost first) and its wait channel."""
    sig = frame_signatures()
    site, epoch, batch = _user_context(frames)
    for frame in frames:
        for item in sig["frames"]:
            if _matches(item, frame):
                op = item.get("op")
                if op == "{function}":
                    op = str(frame.get("name", "")).rsplit(".", 1)[-1]
                return Activity(item["activity"], op, site, epoch, batch)
    for item in sig["fallback"]:
        if "wchan_re" in item:
            if wchan and item["wchan_re"].search(wchan):
                return Activity(item["activity"], None, site, epoch, batch)
        elif any(_matches(item, f) for f in frames):
            return Activity(item["activity"], None, site, epoch, batch)
    return Activity("user_code" if site else "unknown", None, site, epoch, batch)


MAX_COUNTERS = 16


def user_counters(frames: list[dict[str, Any]]) -> dict[str, int]:
    """Integer locals of user frames, as 'function.name' (a step counter changes while a rank progresses)."""
    sig = frame_signatures()
    out: dict[str, int] = {}
    for frame in frames:
        name = str(frame.get("filename", ""))
        if _is_native(frame) or sig["library_re"].search(name):
            continue
        for local in frame.get("locals") or []:
            value = str(local.get("repr", ""))
            if value.lstrip("-").isdigit() and len(value) < 19 and len(out) < MAX_COUNTERS:
                out.setdefault(f"{frame.get('name')}.{local.get('name')}", int(value))
    return out


def user_exits(frames: list[dict[str, Any]]) -> dict[str, int]:
    """'file:line' of user frames whose block goes on to an exit statement (probes/live/flow.py)."""
    sig = frame_signatures()
    out: dict[str, int] = {}
    for frame in frames[:MAX_FRAMES]:
        name = str(frame.get("filename", ""))
        if _is_native(frame) or sig["library_re"].search(name) or not isinstance(frame.get("line"), int):
            continue
        line = flow.exit_after(name, frame["line"])
        if line is not None:
            out[f"{frame.get('short_filename') or name}:{frame['line']}"] = line
    return out


def _user_context(frames: list[dict[str, Any]]) -> tuple[str | None, int | None, int | None]:
    """Innermost user call site, and the epoch/batch locals of user frames."""
    sig = frame_signatures()
    site: str | None = None
    found: dict[str, int] = {}
    for frame in frames:
        name = str(frame.get("filename", ""))
        if _is_native(frame) or sig["library_re"].search(name):
            continue
        site = site or f"{frame.get('short_filename') or name}:{frame.get('line')}"
        values = {v.get("name"): v.get("repr") for v in frame.get("locals") or []}
        for key, names in sig["positions"].items():
            for local in names:
                if key not in found and str(values.get(local, "")).lstrip("-").isdigit():
                    found[key] = int(values[local])
    return site, found.get("epoch"), found.get("batch")


def render(frame: dict[str, Any]) -> str:
    """One frame as py-spy prints it: ``func (file:line)``."""
    short = frame.get("short_filename") or frame.get("filename")
    return f"{frame.get('name')} ({short}:{frame.get('line')})" if frame.get("line") else f"{frame.get('name')} ({short})"


def main_thread(threads: list[dict[str, Any]], pid: int) -> dict[str, Any] | None:
    """The main thread of a dump: named MainThread, or the one whose tid is the pid."""
    for thread in threads:
        if thread.get("thread_name") == "MainThread" or thread.get("os_thread_id") == pid:
            return thread
    return threads[0] if threads else None


def read_wchan(pid: int) -> str | None:
    """The kernel function the process sleeps in (``/proc/PID/wchan``)."""
    try:
        value = Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        return None
    return value if value not in ("", "0") else None  # "0": hidden from other users


def _state(pid: int) -> str | None:
    try:
        return psutil.Process(pid).status()
    except psutil.Error:
        return None


def dump(target: Target, sample: int, *, native: bool = False, timeout: float = 2.0) -> Dump:
    """Run ``py-spy dump --json --locals`` (``--native`` on request) on one process, bounded in time."""
    result = Dump(target=target, sample=sample, native=native, time=time.time())
    binary = pyspy_binary()
    if binary is None:
        result.error = "py-spy is not installed"
        return result
    was_stopped = _state(target.pid) == psutil.STATUS_STOPPED
    cmd = [binary, "dump", "--pid", str(target.pid), "--json", "--locals"] + (["--native"] if native else [])
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        result.raw = proc.stdout
        if proc.returncode == 0:
            result.threads = json.loads(proc.stdout)
        else:
            result.error = _reason(target.pid, proc.stderr or proc.stdout)
    except subprocess.TimeoutExpired:
        result.error = f"py-spy did not answer within {timeout:.1f} s"
    except (OSError, ValueError) as exc:
        result.error = f"py-spy failed: {exc}"
    result.seconds = time.monotonic() - start
    if result.error and not was_stopped and _state(target.pid) == psutil.STATUS_STOPPED:
        os.kill(target.pid, signal.SIGCONT)  # never leave a rank stopped by our attach
    return result


def _reason(pid: int, text: str) -> str:
    """A one-line reason for a failed py-spy run."""
    if not psutil.pid_exists(pid) or _state(pid) == psutil.STATUS_ZOMBIE:
        return "process ended while being probed"
    if pattern_table("live_patterns")["ptrace_refused"].search(text):
        return "ptrace not permitted (needs CAP_SYS_PTRACE or kernel.yama.ptrace_scope=0)"
    if "Failed to find python version" in text:
        return "not a Python process"
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return f"py-spy failed: {lines[-1][:200] if lines else 'no output'}"


def to_evidence(d: Dump) -> StackSample | None:
    """The StackSample of one dump (main thread), or a wait-channel stand-in when py-spy failed."""
    t = d.target
    wchan = read_wchan(t.pid)
    prov = Provenance(probe=PROBE, source=f"py-spy dump pid {t.pid}" if d.threads is not None
                      else f"/proc/{t.pid}", host=t.host, pid=t.pid)
    if d.threads is None:
        if not psutil.pid_exists(t.pid):
            return None
        act = classify([], wchan)
        text = f"no Python stack ({d.error}); state {_state(t.pid)}, wchan {wchan or '?'}"
        return StackSample(rank=t.rank, provenance=prov, text=text, time=d.time, activity=act.activity,
                           sample=d.sample)
    thread = main_thread(d.threads, t.pid)
    frames = list(thread.get("frames") or []) if thread else []
    act = classify(frames, wchan)
    rendered = tuple(render(f) for f in frames[:MAX_FRAMES])
    what = f"{act.activity} {act.op}" if act.op else act.activity
    text = f"rank {t.rank}: {what} at {act.call_site or (rendered[0] if rendered else '?')}"
    return StackSample(rank=t.rank, provenance=prov, text=text, time=d.time, activity=act.activity,
                       op=act.op, call_site=act.call_site, frames=rendered,
                       thread=(thread or {}).get("thread_name"), sample=d.sample, epoch=act.epoch,
                       batch=act.batch, counters=user_counters(frames), exits=user_exits(frames))


def sample_stacks(targets: list[Target], *, samples: int = 2, interval: float = 0.2,
                  timeout: float = 2.0, native_for: tuple[str, ...] = ("backward",), first: int = 0,
                  out: StackResult | None = None) -> StackResult:
    """Sample every target ``samples`` times, in parallel; native frames where the activity needs them.

    ``first`` numbers the samples from there and ``out`` adds them to an earlier result (a later sample).
    """
    more = out is not None
    out = out if out is not None else StackResult()
    if pyspy_binary() is None and not more:
        out.notes.append("py-spy not found: stacks replaced by /proc state and wait channel")
    native: set[int] = set()
    with ThreadPoolExecutor(max_workers=max(1, min(32, len(targets)))) as pool:
        for i in range(first, first + samples):
            if i > first or more:
                time.sleep(interval)
            dumps = list(pool.map(lambda t, i=i: dump(t, i, native=t.pid in native,
                                                      timeout=timeout * (2 if t.pid in native else 1)),
                                  targets))
            out.dumps.extend(dumps)
            for d in dumps:
                ev = to_evidence(d)
                if ev is not None:
                    out.evidence.append(ev)
                    if ev.activity in native_for:
                        native.add(d.target.pid)
    _failures(out)
    return out


def _failures(out: StackResult) -> None:
    """Turn failed dumps into skipped entries and notes, once per process."""
    out.skipped = []
    out.notes = [n for n in out.notes if not n.startswith("ptrace refused")]
    seen: set[int] = set()
    for d in out.dumps:
        if d.error and d.target.pid not in seen:
            seen.add(d.target.pid)
            out.skipped.append(Skipped(source=f"rank {d.target.rank} pid {d.target.pid}", reason=d.error))
    if any("ptrace" in (d.error or "") for d in out.dumps):
        out.notes.append("ptrace refused: stacks replaced by /proc state and wait channel")


def main_frames(dumps: list[Dump]) -> dict[int, list[dict[str, Any]]]:
    """The main thread's frames (with locals) of each process's first successful dump."""
    out: dict[int, list[dict[str, Any]]] = {}
    for d in dumps:
        if d.threads is not None and d.target.pid not in out:
            thread = main_thread(d.threads, d.target.pid)
            out[d.target.pid] = list((thread or {}).get("frames") or [])
    return out


def relabel(result: StackResult, rank_of: dict[int, int | None]) -> None:
    """Give the dumps and samples of each pid the rank `rank_of` says (after discovery settled it)."""
    for d in result.dumps:
        d.target = Target(pid=d.target.pid, rank=rank_of.get(d.target.pid, d.target.rank), host=d.target.host)
    fixed = []
    for ev in result.evidence:
        rank = rank_of.get(ev.provenance.pid or -1, ev.rank)
        text = ev.text.replace(f"rank {ev.rank}:", f"rank {rank}:", 1) if ev.text else ev.text
        fixed.append(ev.model_copy(update={"rank": rank, "text": text}))
    result.evidence = fixed
    result.skipped = [s.model_copy(update={"source": f"rank {rank_of.get(int(s.source.rsplit(' ', 1)[1]))} "
                                                      f"pid {s.source.rsplit(' ', 1)[1]}"})
                      if s.source.startswith("rank ") and s.source.rsplit(" ", 1)[1].isdigit() else s
                      for s in result.skipped]
