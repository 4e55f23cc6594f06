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
