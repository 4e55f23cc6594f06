"""A progress bar on standard error, only on a terminal and only for runs longer than ~1 s.

Probes say how many bytes are ahead and how many are done (``diagnose.probes.progress``): the bar
shows bytes, rate and elapsed time; where no probe gives a total (a live probe), a spinner shows the
elapsed time."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from diagnose.probes import progress as probe_progress

DELAY_S = 1.0  # DIAGNOSE_PROGRESS_DELAY (seconds) changes it


def _delay() -> float:
    try:
        return max(0.0, float(os.environ.get("DIAGNOSE_PROGRESS_DELAY", DELAY_S)))
    except ValueError:
        return DELAY_S


class _Bar:
    """The rich display, drawn only after ``delay`` seconds; updates that come earlier are kept."""

    def __init__(self, what: str, stream: Any) -> None:
        self.display = Progress(SpinnerColumn(), TextColumn(f"diagnose {what}: reading and diagnosing"),
                                BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeElapsedColumn(),
                                console=Console(file=stream), transient=True)
        self.lock = threading.Lock()
        self.task: TaskID | None = None
        self.total: int | None = None
        self.done = 0
        self.finished = False

    def start(self) -> None:
        with self.lock:
            if not self.finished:
                self.display.start()
                self.task = self.display.add_task("scan", total=self.total, completed=self.done)

    def update(self, kind: str, units: int) -> None:
        with self.lock:
            if kind == "begin":
                self.total = (self.total or 0) + units
            else:
                self.done += units
            if self.task is not None:
                self.display.update(self.task, total=self.total, completed=self.done)

    def stop(self) -> None:
        with self.lock:
            self.finished = True
            if self.task is not None:
                self.display.stop()


@contextmanager
def progress(what: str, stream: Any = None, delay: float | None = None) -> Iterator[None]:
    """Show the bar on ``stream`` (stderr) once ``what`` has run ``delay`` seconds, if it is a terminal."""
    stream = stream or sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield
        return
    bar = _Bar(what, stream)
    timer = threading.Timer(_delay() if delay is None else delay, bar.start)
    timer.daemon = True
    timer.start()
    try:
        with probe_progress.listening(bar.update):
            yield
    finally:
        timer.cancel()
        bar.stop()
