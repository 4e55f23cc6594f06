"""Static checks on signature regexes that keep the Python ``re`` paths linear in the line length.

An unanchored pattern that opens with an unbounded repeat (``\\S+\\[``, ``\\d+ bytes``) is retried at
every start position of a long run of characters the repeat accepts, and each try consumes the rest
of the run: quadratic time on one long line. A bound (``\\S{1,256}``) keeps each try short.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

try:  # the stdlib's regex parser: private, so the check is skipped where it is missing
    import re._constants as _c  # optional dependency: the stdlib's private regex parser
    import re._parser as _p  # optional dependency: the stdlib's private regex parser
except ImportError:  # pragma: no cover - other Pythons
    _p = None  # type: ignore[assignment]

MAX_LEADING_REPEAT = 256


def _leading(items: Any) -> Iterator[tuple[int, int]]:
    """(min, max) of each repeat that can open a match of the parsed ``items``."""
    for op, av in items:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            low, high, inner = av
            yield low, high
            if low == 0:
                continue
            return
        if op in (_c.SUBPATTERN, _c.ATOMIC_GROUP):
            yield from _leading(av[-1])
            return
        if op == _c.BRANCH:
            for branch in av[1]:
                yield from _leading(branch)
            return
        if op == _c.AT:
            return  # anchored: one start position per line
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            continue
        return


def unbounded_lead(pattern: str, flags: int = 0) -> str | None:
    """Why ``pattern`` would be quadratic on a long line, or None when its openings are bounded."""
    if _p is None:
        return None
    for _low, high in _leading(_p.parse(pattern, flags)):
        if high == _c.MAXREPEAT or high > MAX_LEADING_REPEAT:
            return (
                "opens with an unbounded repeat, which backtracks quadratically on a long run of the "
                f"characters it accepts: bound it (e.g. \\S{{1,{MAX_LEADING_REPEAT}}}, \\d{{1,12}}) or anchor it"
            )
    return None


def leading_inline_flag(pattern: str) -> str | None:
    """Why ``pattern`` cannot join the scanner's combined expression (it opens with a global inline flag such as
    ``(?i)``, an error anywhere but at the start of that expression), or None."""
    head = pattern.lstrip()
    flags = head[2:].split(")", 1)[0] if head.startswith("(?") else ""
    if flags and set(flags) <= set("aiLmsux"):
        return f"opens with a global inline flag ({head[:len(flags) + 3]}): use caseless: true"
    return None
