"""Metric tables (Markdown, CSV, TSV) -> StepMetric and MetricSeries evidence (``rules/artifacts/metrics.yaml``).

A table counts when its header names a world-size or seed column and at least one measure; each data
row becomes a StepMetric (so the scaling analyzer computes eta across world sizes) and one MetricSeries
per measure (so rules can compare results across seeds or world sizes). Rows are capped. Lists of one
result per line keyed by a GPU count (``8 gpus: 0.5373``) count the same way when one measure is given
at two or more counts.
"""

from __future__ import annotations

from typing import Any

from diagnose.evidence import MetricSeries, StepMetric
from diagnose.probes.artifacts.source import Source, per_world_size, to_float
from diagnose.probes.artifacts.spec import FamilySpec, family
from diagnose.yamlload import number_table

__all__ = ["parse"]

MEASURES = ("throughput", "step_time", "step_time_ms", "epoch_time", "loss", "metric")
STEP_MEASURES = frozenset({"step_time", "step_time_ms", "data_time", "data_time_ms", "throughput", "loss", "epoch_time"})
SI, SECONDS = number_table("units", "si"), number_table("units", "seconds")
STEP_FIELDS = ("step_time", "data_time", "epoch_time", "throughput", "loss", "local_batch", "accumulation", "lr")


def _column(cell: str, spec: FamilySpec) -> tuple[str | None, float, str]:
    """(field, unit factor, header text) of a header cell."""
    text = cell.strip().strip("`*").strip()
    base, unit = text.lower(), ""
    if base.endswith(")") and "(" in base:
        base, unit = base[:base.rindex("(")].strip(), base[base.rindex("(") + 1:-1].strip()
    factor = SECONDS.get(unit, 1.0)
    for field, names in spec.tables["columns"].items():
        if base in names or base.replace("_", " ") in names:
            if field.endswith("_ms"):
                return field[:-3], 1e-3, text
            return field, factor, text
    return None, 1.0, text


def _header(cells: list[str], spec: FamilySpec, labelled: bool = False) -> list[tuple[str | None, float, str]] | None:
    cols = [_column(c, spec) for c in cells]
    fields = {f for f, _, _ in cols}
    if ({"world_size", "seed"} & fields or labelled) and set(MEASURES) & fields:
        return cols
    if {"step", "epoch"} & fields and STEP_MEASURES & {f for f, _, _ in cols}:
        return cols  # per-step metrics of one run
    return None


def _value(cell: str, field: str, factor: float, spec: FamilySpec) -> Any:
    if field in ("world_size", "nodes", "step", "epoch"):
        if field in ("step", "epoch"):
            m = spec.rx("number").match(cell)
            num = to_float(m.group("num")) if m and not m.group("unit") else None
            return int(num) if num is not None and num >= 0 else None
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
    if m.group("si"):
        num *= SI[m.group("si")]
    if field in ("step_time", "epoch_time", "data_time") and unit in SECONDS:
        return num * SECONDS[unit]
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
    """Every qualifying metric table in ``src``, then its lists of results keyed by a GPU count."""
    spec = family("metrics")
    out = _tables(src, spec) if ("|" in src.text or "," in src.text or "\t" in src.text) else []
    return out + _keyed_lines(src, spec)


def _tables(src: Source, spec: FamilySpec) -> list[Any]:
    out: list[Any] = []
    plain: list[tuple[str | None, float, str]] | None = None
    split: list[tuple[str | None, float, str]] | None = None
    groups: list[list[str]] = []
    current, labelled = -1, None
    for no, cells, table in _rows(src, spec):
        if table != current:
            current, labelled = table, _ws_label(src, no, spec)
            groups = [_split_cell(c) for c in cells]
            plain = _header(cells, spec, labelled is not None)
            split = _header([t for g in groups for t in g], spec, labelled is not None) \
                if any(len(g) > 1 for g in groups) else None
            if labelled is not None and {"world_size", "seed"} & {f for f, _, _ in (split or plain or [])}:
                labelled = None  # the table names its own world sizes
            continue
        aligned = _align(groups, cells) if split else None  # as long as ``split`` whenever it is not None
        header, parts = (split, aligned) if aligned is not None else (plain, cells)
        if header is None or len(parts) != len(header):
            continue
        row: dict[str, Any] = {"world_size": labelled} if labelled is not None else {}
        for (field, factor, name), cell in zip(header, parts, strict=True):
            if not field or (v := _value(cell, field, factor, spec)) is None:
                continue
            if field == "metric":
                row.setdefault("results", {})[name.lower()] = v  # each result column keeps its own value
            row.setdefault(field, v)
        out += _row_evidence(src, no, row, header, parts, table)
    return out


def _split_cell(cell: str) -> list[str]:
    """A cell that holds several columns aligned with runs of spaces (sclite's ``Corr    Sub    Err``) as its parts."""
    parts = [p for p in cell.split("  ") if p.strip()]
    return [p.strip() for p in parts] if len(parts) > 1 else [cell]


def _align(groups: list[list[str]], cells: list[str]) -> list[str] | None:
    """The row's cells split the way its header's cells were (a header cell of k parts takes a cell of k numbers),
    or None where the row does not split so."""
    if len(cells) != len(groups):
        return None
    out: list[str] = []
    for parts, cell in zip(groups, cells, strict=True):
        if len(parts) == 1:
            out.append(cell)
            continue
        split = _split_cell(cell)
        if len(split) != len(parts) or any(to_float(p) is None for p in split):
            return None
        out += split
    return out


def _ws_label(src: Source, header_line: int, spec: FamilySpec) -> int | None:
    """The GPU count a short line just above a table names (``ngpu=2``), or None."""
    rx, seen = spec.rx("ws_label"), 0
    for no in range(header_line - 1, 0, -1):
        line = src.lines[no - 1].strip()
        if not line or line.startswith("```"):
            continue
        if (m := rx.match(line)) is not None:
            return int(m.group("n") or m.group("count"))
        seen += 1
        if seen >= int(spec.tables["ws_label_lookback"]):
            return None
    return None


def _row_evidence(src: Source, no: int, row: dict[str, Any], header: list[tuple[str | None, float, str]],
                  cells: list[str], table: int) -> list[Any]:
    ws, seed = row.get("world_size"), row.get("seed")
    if ws is None and seed is None:
        step = {k: row[k] for k in ("step", "epoch", *STEP_FIELDS) if k in row}
        if set(step) - {"step", "epoch", "lr", "local_batch", "accumulation"}:  # a row of per-step metrics
            return [StepMetric(run=src.path, provenance=src.prov(no), rank=src.rank, text=" | ".join(cells)[:500],
                               **step)]
        return []
    label = f"{src.path}:table{table}:" + (f"{ws} GPUs" if ws is not None else f"seed {seed}")
    text = " | ".join(cells)[:500]
    out: list[Any] = []
    step = {k: row[k] for k in STEP_FIELDS if k in row}
    if ws is not None and step:
        out.append(StepMetric(run=label, world_size=ws, provenance=src.prov(no), rank=src.rank, text=text, **step))
    for (field, _, name), _cell in zip(header, cells, strict=True):
        if field in MEASURES and field in row:
            value = row["results"].get(name.lower()) if field == "metric" else row[field]
            if value is None:
                continue  # this result column's cell is empty: no value to report for it
            out.append(MetricSeries(name=name.lower() if field == "metric" else field, run=label, world_size=ws,
                                    seed=seed, values=(float(value),), provenance=src.prov(no), rank=src.rank,
                                    text=text))
    return out


def _line_measure(unit: str, label: str, spec: FamilySpec) -> tuple[str, float] | None:
    """(measure, factor to seconds or 1) of a keyed line's unit, or None for a unit that names no measure."""
    units = spec.tables["line_units"]
    unit = unit.lower()
    if unit in units["throughput"]:
        return "throughput", 1.0
    if unit in units["time"]:
        epoch = any(w in label.lower() for w in spec.tables["epoch_words"])
        return ("epoch_time" if epoch else "step_time"), SECONDS.get(unit, 1.0)
    if unit in units["metric"]:
        return "metric", 1.0
    return None


def _keyed_lines(src: Source, spec: FamilySpec) -> list[Any]:
    """Results keyed by a GPU count, one per line, when a measure appears at two or more counts."""
    pattern = spec.by_name["ws_line"]
    if pattern not in spec.present(src.text):
        return []
    rx, cap = pattern.compiled, int(spec.tables["max_line_results"])
    found: dict[str, list[tuple[int, int, float, str]]] = {}
    for no, line in enumerate(src.lines, 1):
        if not (m := rx.match(line)) or (num := to_float(m.group("num"))) is None:
            continue
        label = f"{m.group('label')} {m.group('what')}"
        if (measure := _line_measure(m.group("unit") or "", label, spec)) is None:
            continue
        found.setdefault(measure[0], []).append((no, int(m.group("n")), num * measure[1], line.strip()[:500]))
        if sum(map(len, found.values())) >= cap:
            break
    return per_world_size(src, found, lambda no, ws: f"{src.path}:line{no}:{ws} GPUs", series_for_timings=True)
