"""Literal-first forms of detect expressions for the multi-pattern scan.

The scan only nominates candidate lines: each signature's own regex decides on the line. So Hyperscan
may look for a superset of each detect, and the cheapest superset is a set of literals one of which
every match contains. On NCCL-INFO-heavy logs Hyperscan spends its time on short literal factors
that the benign lines are full of ("comm 0x", "|", "NCCL INFO "); the longest required factor is
rare instead. ``required_literals`` finds, in the parsed regex, the factor whose shortest string is
longest (runs of literals, small finite alternations and classes expanded), and ``scan_form`` turns
it into an alternation of literals; a detect without a factor of ``MIN_LITERAL`` bytes keeps its
regex (with its opening bound cut, see ``hit_form``).
"""

from __future__ import annotations

import re
from typing import Any

try:  # the stdlib's regex parser: private, so the literal forms are skipped where it is missing
    import re._constants as _c  # optional dependency: the stdlib's private regex parser
    import re._parser as _p  # optional dependency: the stdlib's private regex parser
except ImportError:  # pragma: no cover - other Pythons
    _p = None  # type: ignore[assignment]

MIN_LITERAL = 5   # a shorter factor is frequent in ordinary lines: the regex itself scans better
MAX_STRINGS = 32  # expansions of a factor (alternatives times classes) kept as literals
MAX_UNION = 256   # literals of an alternation's branches together (Hyperscan's literal matcher takes thousands)
MAX_OPTIONAL = 3  # a repeat of at most this many copies is expanded ('s?', '(?:gpu )?', '-{1,2}')
_OPENING_REPEAT = re.compile(r"^((?:\(\?[a-z]+\))?(?:\(\?:)?)(\\[dSsw]|\[(?:\\.|[^\]\\])+\])\{(\d+),\d+\}")

_INLINE_CASELESS = re.compile(r"\(\?[a-zA-Z]*i")
Factor = tuple[int, frozenset[str]]  # (length of its shortest string, its strings)


def hit_form(detect: str) -> str:
    """``detect`` with its opening bounded repeat cut to the minimum (``\\S{1,256}x`` -> ``\\Sx``).

    An unanchored search hits the same lines, at the same match ends, either way; the bound only keeps the
    Python paths linear, and costs Hyperscan a third of its speed over the whole catalog."""
    return _OPENING_REPEAT.sub(lambda m: f"{m.group(1)}{m.group(2)}" + (f"{{{m.group(3)}}}" if m.group(3) != "1" else ""),
                               detect, count=1)


def scan_form(detect: str, caseless: bool = False) -> str:
    """What the multi-pattern scan looks for: the required literals of ``detect`` as an alternation, or
    ``hit_form(detect)`` when it has no factor of ``MIN_LITERAL`` bytes. Every line ``detect`` matches
    holds a match of the form (the match ends of long lines may differ)."""
    if not caseless and _INLINE_CASELESS.search(detect):
        return hit_form(detect)  # a case-insensitive part: its literals are not what the bytes hold
    factor = required_literals(detect, caseless)
    if factor is None or factor[0] < MIN_LITERAL:
        return hit_form(detect)
    return "|".join(re.escape(s) for s in _minimal(factor[1]))


def required_literals(detect: str, caseless: bool = False) -> Factor | None:
    """The factor (set of strings) with the longest shortest string such that every match of ``detect``
    contains one of them; None when none is found (or the parser is missing)."""
    if _p is None:
        return None
    try:
        parsed = _p.parse(detect, re.ASCII | (re.IGNORECASE if caseless else 0))
    except re.error:
        return None
    return _best(list(parsed))


def _best(items: list[Any]) -> Factor | None:
    found = _candidates(items)
    return max(found, key=lambda f: (f[0], -len(f[1]))) if found else None


def _candidates(items: list[Any]) -> list[Factor]:
    """Factors of a sequence: runs of items with a small finite language, and factors inside the
    items every match goes through (groups, alternations whose every branch has one, repeats >= 1)."""
    out: list[Factor] = []
    run: set[str] = {""}

    def flush() -> None:
        if run != {""}:
            out.append((min(map(_size, run)), frozenset(run)))

    for op, av in items:
        lang = _language([(op, av)])
        if lang is not None and len(lang) * len(run) <= MAX_STRINGS:
            run = {a + b for a in run for b in lang}
            continue
        flush()
        run = {""} if lang is None else set(lang)
        if lang is not None:
            continue
        if op is _c.SUBPATTERN:
            out += _candidates(list(av[-1]))
        elif op is _c.BRANCH:
            alts = [_best(list(branch)) for branch in av[1]]
            if all(alts):
                strings = frozenset(s for alt in alts if alt for s in alt[1])
                if len(strings) <= MAX_UNION:
                    out.append((min(alt[0] for alt in alts if alt), strings))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) and av[0] >= 1:
            out += _candidates(list(av[2]))
    flush()
    return out


def _language(items: list[Any]) -> set[str] | None:
    """The strings a sequence can match, when they are few (zero-width assertions match "")."""
    out = {""}
    for op, av in items:
        if op is _c.LITERAL:
            part: set[str] | None = {chr(av)}
        elif op is _c.AT:
            continue
        elif op is _c.IN:
            part = _class_chars(av)
        elif op is _c.SUBPATTERN:
            part = _language(list(av[-1]))
        elif op is _c.BRANCH:
            part = set()
            for branch in av[1]:
                lang = _language(list(branch))
                if lang is None:
                    return None
                part |= lang
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) and av[1] <= MAX_OPTIONAL:
            part = _repeated(_language(list(av[2])), av[0], av[1])  # 'contexts?', '(?:gpu )?', '-{1,2}'
        else:
            return None
        if part is None or len(part) * len(out) > MAX_STRINGS:
            return None
        out = {a + b for a in out for b in part}
    return out


def _size(text: str) -> int:
    """Bytes of ``text`` as the scan sees it (UTF-8): a Chinese phrase of four characters is twelve."""
    return len(text.encode())


def _repeated(lang: set[str] | None, low: int, high: int) -> set[str] | None:
    """The strings of ``lang`` repeated ``low`` to ``high`` times, when they are few."""
    if lang is None:
        return None
    out, power = ({""} if low == 0 else set()), {""}
    for count in range(1, high + 1):
        power = {a + b for a in power for b in lang}
        if len(power) > MAX_STRINGS:
            return None
        if count >= low:
            out |= power
    return out if len(out) <= MAX_STRINGS else None


def _class_chars(av: Any) -> set[str] | None:
    chars: set[str] = set()
    for op, arg in av:
        if op is _c.LITERAL:
            chars.add(chr(arg))
        elif op is _c.RANGE and arg[1] - arg[0] < 4:
            chars |= {chr(x) for x in range(arg[0], arg[1] + 1)}
        else:
            return None  # negated, categories, wide ranges
    return chars


def _minimal(strings: frozenset[str]) -> list[str]:
    """The strings none of the others is a part of (a line holding a longer one holds the shorter)."""
    return sorted(s for s in strings if not any(o != s and o in s for o in strings))
