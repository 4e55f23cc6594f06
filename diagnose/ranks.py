"""Rank lists and signal names, shared by predicates, analyzers and renderers."""

from __future__ import annotations

from collections.abc import Iterable

SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def format_ranks(ranks: Iterable[int]) -> str:
    """Compact rank list: ``0-3,7``."""
    ordered = sorted(set(ranks))
    if not ordered:
        return "none"
    parts, start, prev = [], ordered[0], ordered[0]
    for r in ordered[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ",".join(parts)


MAX_WORLD_SIZE = 1 << 20  # more ranks than any job has run: a larger number in the text is not a world size


def plausible_world(n: int | None) -> bool:
    """Whether ``n`` can be a world size (1 .. MAX_WORLD_SIZE); larger numbers become a note, never a range."""
    return isinstance(n, int) and 0 < n <= MAX_WORLD_SIZE
