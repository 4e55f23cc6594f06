"""Measurements stated in sentences -> StepMetric and MetricSeries evidence (``rules/artifacts/prose.yaml``).

"49s per epoch using a single GPU vs. 82s using 4 GPUs" is a scaling table written as a sentence. Each
timing, rate or result on a line is paired with the nearest GPU count of its clause (else of its line, or of
a count-only line just above); a measure is kept
only when the file states it at two or more world sizes, so one count beside one number reads as nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from diagnose.probes.artifacts.source import TIMINGS, Row, Source, per_world_size, to_float
from diagnose.probes.artifacts.spec import FamilySpec, family
from diagnose.yamlload import number_table

__all__ = ["parse"]

SECONDS = number_table("units", "seconds")


def _world_size(m: re.Match[str], spec: FamilySpec, per_node: int | None) -> int | None:
    """The world size a count mention names (nodes times the GPUs per node when the text gives them)."""
    for exact in ("xcount", "kcount"):  # "8xA100", "nGPU=4"
        if m.group(exact):
            return int(m.group(exact))
    word, unit = (m.group("count"), m.group("unit")) if m.group("count") else (m.group("cjkcount"), m.group("cjkunit"))
    n = int(word) if word.isdigit() else spec.tables["words"].get(word.lower())
    if not n:
        return None
    if unit.lower().startswith("node") or unit == "机":
        return n * (per_node or 1)
    return n


def _duration_field(per: str, seconds: float, line: str) -> str:
    """A time per step, or for a fixed amount of work (an epoch, a whole run): said, else judged."""
    if per:
        return "epoch_time" if per == "epoch" else "step_time"
    if seconds >= 120 or "epoch" in line:  # a step of minutes is rare; a run or an epoch is not
        return "epoch_time"
    return "step_time" if any(w in line for w in ("step", "iter", "batch")) else "epoch_time"


def _measures(line: str, spec: FamilySpec) -> list[tuple[int, str, float]]:
    """(position, field or result name, value) of every timing, rate and result on ``line``."""
    out: list[tuple[int, str, float]] = []
    lower = line.lower()
    bound = spec.rx("not_measured")
    for m in spec.rx("duration").finditer(line):
        value = to_float(m.group("num"))
        if value is not None and not bound.search(line[max(0, m.start() - 40):m.start()]):  # a limit, not a timing
            seconds = value * SECONDS[m.group("unit").lower()]
            out.append((m.start(), _duration_field((m.group("per") or "").lower(), seconds, lower), seconds))
    for name in ("rate", "per_iteration"):
        for m in spec.rx(name).finditer(line):
            value = to_float(m.group("num"))
            if value is not None:
                out.append((m.start(), "throughput" if name == "rate" else "step_time", value))
    for m in spec.rx("result").finditer(line):
        value = to_float(m.group("num"))
        if value is not None:
            out.append((m.start(), m.group("name").lower(), value))
    named = {pos for pos, f, _ in out if f not in TIMINGS}
    for m in spec.rx("obtained").finditer(line):
        value = to_float(m.group("num").rstrip("%"))
        if value is not None and not any(abs(m.start() - p) < 40 for p in named):
            out.append((m.start(), "result", value))
    return out


def _nearest(counts: list[tuple[int, int, int]], pos: int, breaks: list[int]) -> int:
    """The world size of the nearest count in the measure's clause, else of the last count stated before it (a
    count comes before its numbers: "单机多卡...训练时，batch time为0.37s"), else the nearest count on the line."""
    def clause(p: int) -> int:
        return sum(b < p for b in breaks)

    def gap(c: tuple[int, int, int]) -> int:
        return pos - c[1] if c[1] <= pos else c[0] - pos
    same = [c for c in counts if clause(c[0]) == clause(pos)]
    if same:
        return min(same, key=gap)[2]
    before = [c for c in counts if c[1] <= pos]
    return max(before)[2] if before else min(counts, key=gap)[2]


def parse(src: Source) -> list[Any]:
    """Timings and results the text states at two or more GPU counts."""
    spec = family("prose")
    lines = src.lines[:int(spec.tables["max_lines"])]  # sentences are read from the head only
    text = "\n".join(lines)
    lower = text.lower()
    if not any(n in lower for n in spec.tables["needs"]):
        return []
    count_rx, multi_rx, record = spec.rx("count"), spec.rx("multi"), spec.rx("log_record")
    per_node_m = spec.rx("per_node").search(lower)
    per_node = int(per_node_m.group("n")) if per_node_m else None
    mentioned = [ws for m in count_rx.finditer(text) if (ws := _world_size(m, spec, per_node))]
    several = max((n for n in mentioned if n > 1), default=None)  # what "multi-GPU" means in this text
    found: dict[str, list[Row]] = defaultdict(list)
    cap = int(spec.tables["max_line"])
    heading = (-9, 0)  # (line, world size) of the last count stated: numbers on the next two lines may be its
    for no, line in enumerate(lines, 1):
        if len(line) > cap or line.count("|") >= 2 or record.match(line):
            continue
        counts = [(m.start(), m.end(), ws) for m in count_rx.finditer(line) if (ws := _world_size(m, spec, per_node))]
        if several:
            counts += [(m.start(), m.end(), several) for m in multi_rx.finditer(line)]
        measures = _measures(line, spec) if counts or no - heading[0] <= 2 else []
        if not counts:  # "When I train on 4xGPUs:" (or "单GPU: {'loss': ...}") then the numbers on the next line
            counts = [(-1, -1, heading[1])] if measures else []
        else:
            heading = (no, counts[-1][2])
        breaks = [m.start() for m in spec.rx("clause_break").finditer(line)] if measures else []
        for pos, field, value in measures:
            ws = _nearest(counts, pos, breaks)
            found[field].append((no, ws, value, line.strip()[:500]))
    return per_world_size(src, found, lambda no, ws: f"{src.path.rsplit('/', 1)[-1]}: {ws} GPU{'s' if ws > 1 else ''}")
