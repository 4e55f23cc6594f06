"""A progress indicator on standard error, only on a terminal and only for runs longer than ~1 s."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

DELAY_S = 1.0


@contextmanager
def progress(what: str, stream: Any = None, delay: float = DELAY_S) -> Iterator[None]:
    """Show a spinner with the elapsed time on ``stream`` (stderr) once ``what`` has run ``delay`` seconds."""
    stream = stream or sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield
        return
    bar = Progress(SpinnerColumn(), TextColumn(f"diagnose {what}: reading and diagnosing"), TimeElapsedColumn(),
                   console=Console(file=stream), transient=True)
    lock = threading.Lock()
    state = {"started": False, "done": False}

    def start() -> None:
        with lock:
            if not state["done"]:
                bar.start()
                bar.add_task(what, total=None)
                state["started"] = True

    timer = threading.Timer(delay, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["started"]:
                bar.stop()
