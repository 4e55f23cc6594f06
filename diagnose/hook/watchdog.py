"""A daemon thread that notices when the training loop stops making progress.

Progress is read by polling a cheap callable (the step counter, or the main thread's
position); the training thread itself does no work for the watchdog.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Hashable

MAX_SAMPLES = 2  # a second sample, one timeout later, tells stuck from slow


class Watchdog(threading.Thread):
    """Calls `on_stall(idle_seconds, sample_index)` after `timeout` s without progress (twice at most per stall).

    Before the first progress is seen the threshold is `first_timeout` (None: wait for the
    first progress, so a slow start-up is not reported as a stall).
    """

    def __init__(self, timeout: float, progress: Callable[[], Hashable],
                 on_stall: Callable[[float, int], None], first_timeout: float | None = None) -> None:
        super().__init__(name="diagnose-watchdog", daemon=True)
        self.timeout = float(timeout)
        self.first_timeout = first_timeout
        self.interval = min(max(self.timeout / 4.0, 0.05), 1.0)
        self._progress = progress
        self._on_stall = on_stall
        self._stop_event = threading.Event()
        self.fired = 0

    def stop(self) -> None:
        """Ask the thread to end (it does within one polling interval)."""
        self._stop_event.set()

    def run(self) -> None:
        last = self._read()
        last_change = time.monotonic()
        samples = 0
        threshold = self.first_timeout
        while not self._stop_event.wait(self.interval):
            current = self._read()
            now = time.monotonic()
            if current != last:
                last, last_change, samples, threshold = current, now, 0, self.timeout
                continue
            idle = now - last_change
            if threshold is not None and samples < MAX_SAMPLES and idle >= threshold * (samples + 1):
                with contextlib.suppress(Exception):
                    self._on_stall(idle, samples)
                samples += 1
                self.fired += 1

    def _read(self) -> Hashable:
        try:
            return self._progress()
        except Exception:
            return None


def frame_position(ident: int | None) -> Hashable:
    """Where a thread is executing: changes while it runs Python code, stays put while it blocks."""
    frame = sys._current_frames().get(ident) if ident is not None else None
    if frame is None:
        return None
    return (id(frame.f_code), frame.f_lasti, id(frame))


def thread_activity(native_id: int | None) -> Hashable:
    """CPU ticks and voluntary context switches of a thread (Linux): they move while it computes in C or
    sleeps in a loop, and stay put while it blocks for good (a collective, a lock, an event)."""
    if native_id is None:
        return None
    task = f"/proc/self/task/{native_id}"
    try:
        with open(f"{task}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rpartition(")")[2].split()
        with open(f"{task}/status", encoding="ascii", errors="replace") as fh:
            switches = next((line.split()[1] for line in fh if line.startswith("voluntary_ctxt_switches")), "")
        return (int(fields[11]) + int(fields[12]), switches)
    except (OSError, ValueError, IndexError):
        return None
