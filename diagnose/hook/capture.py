"""One bounded capture: collect evidence, diagnose, write the per-rank report, print a few lines.

The work runs in a daemon thread; the caller waits at most `HookConfig.timeout` seconds.
Past the deadline the caller writes what was collected so far (without the engine) and
returns; nothing here raises.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from diagnose.hook import collect, reportfile, stacks, torchstate
from diagnose.hook.collect import Evidence
from diagnose.hook.patterns import pattern

CARRIED_KINDS = ("stack_sample", "collective_state", "log_line", "rank_status")
_history: list[Evidence] = []
_history_lock = threading.Lock()


@dataclass
class HookConfig:
    """Settings of the installed hook."""

    report_dir: Path
    watchdog_timeout: float | None = None
    timeout: float = 5.0
    print_diagnosis: bool = True
    use_engine: bool = True
    progress: str = "step"
    startup_timeout: float | None = None


class _Job:
    def __init__(self) -> None:
        self.evidence: list[Evidence] = []
        self.info: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.stage = "start"
        self.done = False
        self.abandoned = False
        self.path: Path | None = None


Collector = Callable[[_Job], str]


def _key(item: Evidence) -> str:
    return json.dumps({k: v for k, v in item.items() if k != "time"}, sort_keys=True, default=str)


def _merged(new: list[Evidence]) -> list[Evidence]:
    """Evidence of earlier captures in this process (watchdog samples) plus the new, without repeats.

    Of the flight recorder's states of one group, a pending one seen during a stall is kept
    over a later one: after a timeout gloo retires the failed collective as if completed.
    """
    with _history_lock:
        items = [e for e in _history if e.get("kind") in CARRIED_KINDS] + new
    pending = {e.get("process_group") for e in items if _is_fr(e) and e.get("state") != "completed"}
    seen: set[str] = set()
    out = []
    for item in items:
        key = _key(item)
        stale = _is_fr(item) and item.get("state") == "completed" and item.get("process_group") in pending
        if key not in seen and not stale:
            seen.add(key)
            out.append(item)
    return out


def _is_fr(item: Evidence) -> bool:
    return item.get("kind") == "collective_state" and item.get("provenance", {}).get("source") == "flight_recorder"


def forget_stalls() -> None:
    """Drop what earlier captures saw: the stall they saw has since resolved."""
    with _history_lock:
        _history.clear()


def _samples_so_far() -> int:
    with _history_lock:
        return sum(1 for e in _history if e.get("kind") == "stack_sample")


def _finish(job: _Job, config: HookConfig, headline: str, use_engine: bool, notes: list[str]) -> None:
    evidence = _merged(list(job.evidence))
    info = job.info or collect.rank_info()
    rank = info.get("rank") if info.get("rank") is not None else 0
    meta = {"rank": rank, "attempt": info.get("attempt", 0), "world_size": info.get("world_size"),
            "directory": str(config.report_dir), "notes": notes}
    data = reportfile.build_report(evidence, meta, use_engine=use_engine)
    if not job.lock.acquire(timeout=1.0):
        return
    unwritten: str | None = None
    path: Path | None = None
    try:
        if job.done or (job.abandoned and use_engine):
            return
        try:
            path = reportfile.write_report(reportfile.report_path(config.report_dir, rank, meta["attempt"]), data)
        except OSError as exc:  # full, read-only or not ours: say so once, never retry past the bound
            unwritten = f"{exc.strerror or type(exc).__name__} ({config.report_dir})"
        with _history_lock:
            _history[:] = evidence[-500:]
        job.path = path
        job.done = True
    finally:
        job.lock.release()
    if unwritten is not None:
        _print([f"{reportfile.PREFIX} rank {rank}: report not written, the report directory refused it: "
                f"{unwritten}; {headline}"[:400]])
    elif config.print_diagnosis:
        _print(reportfile.summary_lines(data, headline, path))


def _print(lines: list[str]) -> None:
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write("\n".join(lines) + "\n")
        stream.flush()
    except Exception:
        pass


def run_bounded(config: HookConfig, collector: Collector) -> Path | None:
    """Run `collector` and the report in a thread; past the deadline write what there is."""
    job = _Job()
    headline: list[str] = ["(collection did not finish)"]

    def work() -> None:
        try:
            job.info = collect.rank_info()
            headline[0] = collector(job)
            job.stage = "diagnosis"
            _finish(job, config, headline[0], config.use_engine, [])
        except BaseException:
            pass

    started = time.monotonic()
    try:
        thread = threading.Thread(target=work, name="diagnose-capture", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (e.g. address space exhausted): stdlib only, inline
            config = replace(config, use_engine=False)
            work()
        else:
            thread.join(config.timeout)
        if not job.done:
            job.abandoned = True
            note = f"capture stopped at stage '{job.stage}' after {time.monotonic() - started:.1f}s (bound)"
            _finish(job, config, headline[0], False, [note])
    except BaseException:
        pass
    return job.path


def exception_collector(exc: BaseException, thread: str, uncaught: bool) -> Collector:
    """What to collect about an exception."""

    def run(job: _Job) -> str:
        rank = job.info.get("rank")
        items = collect.exception_evidence(exc, rank, thread, uncaught)
        for item in items:
            if item["kind"] == "stack_sample":
                item["sample"] = _samples_so_far()
        job.evidence.extend(items)
        job.stage = "environment"
        job.evidence.append(collect.env_evidence(job.info))
        oom = collect.oom_figures(str(exc))
        job.evidence.append(collect.host_memory(rank, oom.get("requested") if oom.get("device") == "host" else None))
        job.stage = "torch"
        job.evidence.extend(torchstate.process_groups(rank))
        job.evidence.extend(torchstate.cuda_memory(rank, oom))
        job.evidence.extend(torchstate.dataloader_workers(torchstate.frames_of(exc.__traceback__), rank))
        job.stage = "flight recorder"
        sample = next(e for e in items if e["kind"] == "stack_sample")
        timed_out = sample["activity"] in ("collective", "barrier") and pattern("timeout_message").search(str(exc))
        for state in torchstate.flight_recorder(rank):
            if timed_out and state.get("process_group") == "0":
                state["state"] = "timed_out"
                state["text"] += f" (the collective raised: {str(exc)[:200]})"
            job.evidence.append(state)
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return f"{type(exc).__name__}: {first} ({sample['text'].split(' raised ', 1)[-1]})"

    return run


def stall_collector(idle: float, steps: int, main_ident: int | None, main_native: int | None) -> Collector:
    """What to collect when the watchdog sees no progress: the main thread's stack and state."""

    def run(job: _Job) -> str:
        rank = job.info.get("rank")
        frame = sys._current_frames().get(main_ident) if main_ident is not None else None
        frames = stacks.frames_from_frame(frame)
        wchan = stacks.thread_wchan(main_native)
        activity, op, site = stacks.classify(frames, wchan)
        where = f"{activity}" + (f" ({op})" if op else "") + (f" at {site}" if site else "")
        text = f"no progress for {idle:.1f}s after step {steps}; main thread: {where}" + (
            f"; wchan {wchan}" if wchan else "")
        job.evidence.append(collect.make("stack_sample", rank, "watchdog", text, activity=activity, op=op,
                                         call_site=site, frames=list(stacks.render(frames)),
                                         thread="MainThread", sample=_samples_so_far(),
                                         exits=stacks.exits(frames) or None))
        job.evidence.append(collect.make("rank_status", rank, "watchdog", text, status="alive",
                                         detail=f"no progress for {idle:.1f}s"))
        job.stage = "environment"
        job.evidence.append(collect.env_evidence(job.info))
        job.evidence.append(collect.host_memory(rank))
        job.stage = "torch"
        job.evidence.extend(torchstate.process_groups(rank))
        job.evidence.extend(torchstate.cuda_memory(rank, {}))
        live: list[Any] = []
        while frame is not None and len(live) < 64:
            live.append(frame)
            frame = frame.f_back
        job.evidence.extend(torchstate.dataloader_workers(live, rank))
        job.stage = "flight recorder"
        job.evidence.extend(torchstate.flight_recorder(rank))
        return f"no progress for {idle:.0f}s; main thread: {where}"

    return run
