"""Find the step-time candidate lines of a buffer in one multi-pattern pass (Hyperscan, else ``re``).

Lines are split as Python's universal newlines split them (``\\n``, ``\\r\\n``, lone ``\\r``:
tqdm bars), so line numbers match a text-mode read. Candidates are the lines any step-time
signature detects, plus summary-table rows (``| ... |``) that the table parser reads.
"""

from __future__ import annotations

import re
from typing import Any

import diagnose.cache as scan_cache
from diagnose.probes.logs.scan_normalize import strip_ansi
from diagnose.probes.steptime.spec import StepSpec

try:  # the fast detector is optional: the Python ``re`` gate is a correct fallback
    import hyperscan  # type: ignore[import-untyped]  # optional dependency: hyperscan
except ImportError:  # pragma: no cover - exercised where the wheel is missing
    hyperscan = None

TABLE_ROW = r"^[ \t]*\|"   # a candidate; the parser reads it as a table row only when it also ends with `|`
_TABLE_ROW = re.compile(TABLE_ROW.encode(), re.MULTILINE)
_DBS: dict[tuple[int, str], Any] = {}


def step_candidate_lines(data: bytes, spec: StepSpec) -> list[tuple[int, str]]:
    """``(line number, text)`` of every line that may carry a step metric or a table row, in order."""
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    text = strip_ansi(text)  # torchtitan and Keras 3 colour their progress lines
    starts = sorted(_hit_line_starts(text, spec))
    out: list[tuple[int, str]] = []
    line_no, pos = 1, 0
    for start in starts:
        line_no += text.count(b"\n", pos, start)
        pos = start
        end = text.find(b"\n", start)
        out.append((line_no, text[start:end if end >= 0 else len(text)].decode("utf-8", "replace")))
    return out


def _hit_line_starts(text: bytes, spec: StepSpec) -> set[int]:
    starts: set[int] = set()
    last = [-1, -1]  # (searched up to, line start found there): linear in the buffer's length

    def start_of(end: int) -> int:
        if end - 1 > last[0]:
            nl = text.rfind(b"\n", max(last[0], 0), end - 1)
            if nl >= 0 or last[0] < 0:
                last[1] = nl + 1
            last[0] = end - 1
        return max(last[1], 0)

    db = step_database(spec, "MULTILINE")
    if db is None:
        for m in spec.gate.finditer(text.decode("latin-1")):
            starts.add(start_of(max(m.end(), m.start() + 1)))
    else:
        def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: Any) -> None:
            starts.add(start_of(max(end, 1)))
        db.scan(text, match_event_handler=on_match)
    starts.update(m.start() for m in _TABLE_ROW.finditer(text))
    return starts


def step_database(spec: StepSpec, flag: str) -> Any:
    """The step-time signatures compiled once per spec and Hyperscan flag (``MULTILINE`` to find the
    candidate lines of a file, ``SINGLEMATCH`` to test one line); None without hyperscan."""
    if hyperscan is None:
        return None
    key = (id(spec), flag)
    if key not in _DBS:
        base = getattr(hyperscan, f"HS_FLAG_{flag}")
        flags = [base | (hyperscan.HS_FLAG_CASELESS if s.caseless else 0) for s in spec.signatures]
        exprs = [s.detect.encode() for s in spec.signatures]

        def build() -> Any:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
            return db

        name = "steps-" + scan_cache.digest([flag, *exprs, *map(str, flags)])
        _DBS[key] = scan_cache.hyperscan_database(name, build)
    return _DBS[key]
