"""Metric tables (Markdown, CSV, TSV) -> StepMetric and MetricSeries evidence (``rules/artifacts/metrics.yaml``).

A table counts when its header names a world-size or seed column and at least one measure; each data
row becomes a StepMetric (so the scaling analyzer computes eta across world sizes) and one MetricSeries
per measure (so rules can compare results across seeds or world sizes). Rows are capped.
"""

from __future__ import annotations

from typing import Any

from diagnose.evidence import MetricSeries, StepMetric
from diagnose.probes.artifacts.source import Source, to_float
from diagnose.probes.artifacts.spec import FamilySpec, family

__all__ = ["parse"]

MEASURES = ("throughput", "step_time", "step_time_ms", "epoch_time", "loss", "metric")


def _column(cell: str, spec: FamilySpec) -> tuple[str | None, float, str]:
    """(field, unit factor, header text) of a header cell."""
    text = cell.strip().strip("`*").strip()
    base, unit = text.lower(), ""
    if base.endswith(")") and "(" in base:
        base, unit = base[:base.rindex("(")].strip(), base[base.rindex("(") + 1:-1].strip()
    factor = float(spec.tables["units"].get(unit, 1.0))
    for field, names in spec.tables["columns"].items():
        if base in names or base.replace("_", " ") in names:
            if field == "step_time_ms":
                return "step_time", 1e-3, text
            return field, factor, text
    return None, 1.0, text


def _header(cells: list[str], spec: FamilySpec) -> list[tuple[str | None, float, str]] | None:
    cols = [_column(c, spec) for c in cells]
    fields = {f for f, _, _ in cols}
    if not ({"world_size", "seed"} & fields and set(MEASURES) & fields):
        return None
    return cols


def _value(cell: str, field: str, factor: float, spec: FamilySpec) -> Any:
    if field in ("world_size", "nodes"):
        m = spec.rx("count_cell").match(cell)
        if not m:
            return None
        return int(m.group("n")) * (int(m.group("nodes")) if m.group("nodes") else 1) if field == "world_size" \
            else int(m.group("n"))
    m = spec.rx("number").match(cell)
    if not m:
        return None
    num = to_float(m.group("num"))
    if num is None:
        return None
    unit = m.group("unit")
    if field in ("step_time", "epoch_time") and unit in spec.tables["units"]:
        return num * float(spec.tables["units"][unit])
    return int(num) if field in ("seed", "local_batch", "accumulation") else num * factor


def _rows(src: Source, spec: FamilySpec) -> list[tuple[int, list[str], int]]:
    """(line, cells, table index) of every table row, Markdown or delimited."""
    out: list[tuple[int, list[str], int]] = []
    md, rule, csv = spec.rx("md_row"), spec.rx("md_rule"), spec.rx("csv_header")
    table, in_csv, sep = 0, False, ","
    last = -2
    cap = int(spec.tables["max_rows"])
    for no, line in enumerate(src.lines, 1):
        if len(out) >= cap:
            src.notes.append(f"{src.path}: table rows after {cap} not read")
            break
        if "|" in line and (m := md.match(line)):
            if rule.match(line):
                last = no
                continue
            if no != last + 1:
                table += 1
            out.append((no, [c.strip() for c in m.group("cells").split("|")], table))
            last = no
            continue
        if ("," in line or "\t" in line) and (in_csv or csv.match(line)):
            if not in_csv:
                table, in_csv = table + 1, True
                sep = "\t" if line.count("\t") > line.count(",") else ","
            cells = [c.strip() for c in line.split(sep)]
            if len(cells) >= 2:
                out.append((no, cells, table))
                continue
        in_csv = False
    return out


def parse(src: Source) -> list[Any]:
    """Every qualifying metric table in ``src``."""
    spec = family("metrics")
    if "|" not in src.text and "," not in src.text and "\t" not in src.text:
        return []
    out: list[Any] = []
    header: list[tuple[str | None, float, str]] | None = None
    current = -1
    for no, cells, table in _rows(src, spec):
        if table != current:
            current, header = table, _header(cells, spec)
            continue
        if header is None or len(cells) != len(header):
            continue
        row: dict[str, Any] = {}
        for (field, factor, _), cell in zip(header, cells, strict=True):
            if field and field not in row and (v := _value(cell, field, factor, spec)) is not None:
                row[field] = v
        out += _row_evidence(src, no, row, header, cells, table)
    return out


def _row_evidence(src: Source, no: int, row: dict[str, Any], header: list[tuple[str | None, float, str]],
                  cells: list[str], table: int) -> list[Any]:
    ws, seed = row.get("world_size"), row.get("seed")
    if ws is None and seed is None:
        return []
    label = f"{src.path}:table{table}:" + (f"{ws} GPUs" if ws is not None else f"seed {seed}")
    text = " | ".join(cells)[:500]
    out: list[Any] = []
    step = {k: row[k] for k in ("step_time", "epoch_time", "throughput", "loss", "local_batch", "accumulation", "lr")
            if k in row}
    if ws is not None and step:
        out.append(StepMetric(run=label, world_size=ws, provenance=src.prov(no), rank=src.rank, text=text, **step))
    for (field, _, name), _cell in zip(header, cells, strict=True):
        if field in MEASURES and field in row:
            out.append(MetricSeries(name=name.lower() if field == "metric" else field, run=label, world_size=ws,
                                    seed=seed, values=(float(row[field]),), provenance=src.prov(no), rank=src.rank,
                                    text=text))
    return out
