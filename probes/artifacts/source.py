"""One text artifact as the parsers see it: its path, its lines (read once), and shared helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from diagnose.evidence import MetricSeries, Provenance, StepMetric

MAX_LINE = 8192  # longer lines are cut: no artifact line is that long


@dataclass
class Source:
    """A file's text, split into lines once; notes collect what could not be parsed."""

    path: str
    text: str
    rank: int | None = None
    notes: list[str] = field(default_factory=list)
    line_offset: int = 0  # lines of the file before ``text`` (a piece read from the file's tail)
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # what readers share of it

    def __post_init__(self) -> None:
        self.lines = [line[:MAX_LINE] for line in self.text.splitlines()]

    def prov(self, line: int | None) -> Provenance:
        """Provenance of 1-based ``line`` of ``text``, numbered as in the whole file."""
        return Provenance(probe="artifacts", source=self.path, line=None if line is None else line + self.line_offset)

    def logical_lines(self) -> Iterator[tuple[int, str]]:
        """(first line number, text) with shell continuations (trailing backslash) joined."""
        if "\\\n" not in self.text and not self.text.endswith("\\"):
            yield from enumerate(self.lines, 1)
            return
        buf: list[str] = []
        start = 0
        for no, line in enumerate(self.lines, 1):
            if not buf:
                start = no
            if line.endswith("\\") and len(buf) < 64:
                buf.append(line[:-1])
                continue
            buf.append(line)
            yield start, " ".join(part.strip() for part in buf)
            buf = []
        if buf:
            yield start, " ".join(part.strip() for part in buf)


# (line, world size, value, line text) of one measure read at some world size
Row = tuple[int, int, float, str]
TIMINGS = frozenset({"step_time", "epoch_time", "throughput"})


def per_world_size(src: Source, found: dict[str, list[Row]], run: Callable[[int, int], str],
                   series_for_timings: bool = False) -> list[Any]:
    """Evidence of every measure read at two or more world sizes (one world size compares nothing): a
    StepMetric per timing row, a MetricSeries per result row (and per timing row with ``series_for_timings``)."""
    out: list[Any] = []
    for measure, rows in found.items():
        if len({ws for _, ws, _, _ in rows}) < 2:
            continue
        for no, ws, value, text in rows:
            label = run(no, ws)
            if measure in TIMINGS:
                out.append(StepMetric(run=label, world_size=ws, provenance=src.prov(no), rank=src.rank, text=text,
                                      **{measure: value}))
            if measure not in TIMINGS or series_for_timings:
                out.append(MetricSeries(name=measure, run=label, world_size=ws, values=(value,),
                                        provenance=src.prov(no), rank=src.rank, text=text))
    return out


def to_int(value: Any) -> int | None:
    """An int from ``value`` ("4", 4, "1:4" -> 4, "gpu:a100:4" -> 4), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    text = str(value).strip().strip("\"'")
    tail = text.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() and len(tail) < 10 else None


def to_float(value: Any) -> float | None:
    """A float from ``value`` or None (booleans are not numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(str(value).strip().strip("\"'").replace(",", ""))
    except ValueError:
        return None
    return out if out == out and abs(out) != float("inf") else None


def to_bool(value: Any) -> bool | None:
    """True/False from YAML/JSON/CLI spellings, or None."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().strip("\"'").lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0", "none", "null"):
        return False
    return None
