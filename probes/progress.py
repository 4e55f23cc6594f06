"""How far a probe has got, for whoever listens (the CLI's progress bar); a no-op when nobody does.

Probes call ``begin(total)`` with the units of work ahead (bytes of input) and ``advance(n)`` as units
are done, in the parent process. Listening is process-wide and set by the command line only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int], None]  # ("begin" | "advance", units)
_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send every probe's progress to ``listener`` while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def begin(total: int) -> None:
    """``total`` units of work are ahead."""
    for listener in _listeners:
        listener("begin", total)


def advance(units: int) -> None:
    """``units`` more are done."""
    for listener in _listeners:
        listener("advance", units)
