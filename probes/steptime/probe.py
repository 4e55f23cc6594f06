"""Step-time, throughput, loss and learning-rate lines of training logs, as StepMetric evidence.

The patterns are data (``rules/signatures/steptime.yaml``): every signature that
hits a line contributes its named groups, and the merged fields become one
StepMetric. Summary tables (``| data_time per batch | 0.002 s | 0.217 s |``) give
one metric per column, labelled by the table's header row. Never raises on input.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diagnose.evidence import Provenance, StepMetric
from diagnose.probes.artifacts import launch
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import family
from diagnose.probes.logs.probe import rank_from_line, rank_from_path
from diagnose.probes.logs.scan_normalize import strip_ansi_text
from diagnose.probes.steptime.scan_steps import step_database
from diagnose.probes.steptime.spec import StepSpec, label_world, steptime_spec
from diagnose.yamlload import number_table, pattern_table

__all__ = ["command_runs", "parse_step_lines", "run_label"]

MAX_LINE = 4096
TIME_FIELDS = ("step_time", "data_time", "comm_time", "compute_time", "epoch_time", "sync_time")
INT_FIELDS = ("step", "epoch", "world_size", "local_batch", "accumulation", "steps_per_epoch", "rank")
FLOAT_FIELDS = ("throughput", "loss", "lr")
SI = number_table("units", "si")
SECONDS = number_table("units", "seconds")
PROGRESS = ("step", "epoch", "step_time", "data_time", "comm_time", "compute_time", "sync_time", "throughput", "loss",
            "epoch_time", "steps_per_epoch", "batch")


def parse_step_lines(lines: Iterable[tuple[int, str]], source: str,
                     runs: list[tuple[int, int | None]] | None = None) -> list[StepMetric]:
    """StepMetrics from ``(line number, text)`` pairs of one source; unrecognised lines are ignored. ``runs``: the
    (line, world size) of each command of a shell transcript that starts a run (``command_runs``): the lines after
    one belong to that run, at its world size."""
    spec = steptime_spec()
    runs = runs or []
    at = -1
    file_ws, file_ddp = label_world(Path(source).name, spec)
    file_rank = rank_from_path(source)
    base = run_label(source, file_rank)
    header: list[str] | None = None
    labels: dict[str, int] = {}
    last_label: str | None = None
    out: list[StepMetric] = []
    last_step: dict[int | None, int] = {}  # the step each rank's lines last named: lines after it belong to it
    skip = spec.labels.get("skip")
    for line_no, raw in lines:
        text = strip_ansi_text(raw[:MAX_LINE] if isinstance(raw, str) else str(raw)[:MAX_LINE])
        stripped = text.strip()
        if len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|"):
            header = _table(stripped, header, line_no, source, spec, out)
            continue
        hit = _detect(text, spec)
        if not hit or (skip is not None and skip.search(text)):
            continue
        fields = _fields(text, spec, hit)
        while at + 1 < len(runs) and runs[at + 1][0] < line_no:
            at += 1
        if fields and at >= 0:
            fields.setdefault("run", f"run {at + 1}")
            if runs[at][1] is not None and file_ws is None:
                fields.setdefault("world_size", runs[at][1])
        if fields:
            if file_ws is not None:
                fields.setdefault("world_size", file_ws)
            if file_ddp is not None and "world_size" not in fields:
                fields.setdefault("distributed", file_ddp)
            if "run" in fields:  # a label seen again after others starts another set of runs
                label = fields["run"]
                if label != last_label:
                    labels[label] = labels.get(label, 0) + 1
                last_label = label
                fields["run"] = label if labels[label] == 1 else f"{label} #{labels[label]}"
            fields.setdefault("run", base)
            if file_rank is not None:
                fields.setdefault("rank", file_rank)
            if "step" in fields:
                last_step[fields.get("rank")] = fields["step"]
            elif fields.get("rank") in last_step:  # a block format: `STEP: 3/100`, then one metric per line
                fields["step"] = last_step[fields.get("rank")]
            metric = _metric(fields, source, line_no, stripped, base)
            if metric is not None:
                out.append(metric)
    if not any(getattr(m, f) is not None for m in out for f in PROGRESS):
        return []  # settings alone (a config, a command line, a banner) are context for progress lines, not steps
    return out


def command_runs(data: bytes, path: str) -> list[tuple[int, int | None]]:
    """(line, world size or None) of each command after a shell prompt that starts a launcher or python, when a
    transcript holds two or more: each command and the output below it are one run (two runs compared)."""
    if b"$ " not in data and b"# " not in data:
        return []
    spec = family("launch")
    prompt, pythons = spec.rx("prompt"), set(spec.tables["pythons"])
    words = pythons | {e["program"] for e in spec.tables["launchers"] if "program" in e}
    starts: set[int] = set()  # starts of the lines that name a launcher or python (found by bytes.find)
    for word in {w.rstrip("0123456789.") or w for w in words}:
        needle, at = word.encode(), 0
        while len(starts) < 100000 and (hit := data.find(needle, at)) >= 0:
            starts.add(data.rfind(b"\n", 0, hit) + 1)
            at = data.find(b"\n", hit) + 1 or len(data)
    out: list[tuple[int, int | None]] = []
    line_no, pos = 1, 0
    for begin in sorted(starts):
        line_no, pos = line_no + data.count(b"\n", pos, begin), begin
        end = data.find(b"\n", begin)
        raw = data[begin:end if end >= 0 else len(data)][:4096].decode("utf-8", "replace").rstrip("\r")
        head = raw.lstrip()[:1]
        if not head or head not in "$#%>(" and "@" not in raw[:64]:
            continue
        if not words.intersection(w.rsplit("/", 1)[-1] for w in raw.split(None, 9)[:9]):
            continue  # no launcher or python among its first words: cheap before the prompt and shell-splitting
        if not (m := prompt.match(raw)):
            continue
        _, tokens = launch.split_command(m.group("cmd"), spec)
        python = bool(tokens) and tokens[0].rsplit("/", 1)[-1] in pythons
        if not python and launch.launcher_of(tokens, spec) is None:
            continue  # a prompt before a command that starts no run (ls, nvidia-smi, a comment)
        specs = [e for e in launch.parse(Source(path, m.group("cmd"))) if e.launcher not in ("env", "code")]
        world = next((e.processes for e in specs if e.processes), None)
        out.append((line_no, world))
        if len(out) > 64:
            break
    return out if len(out) >= 2 else []


def _detect(text: str, spec: StepSpec) -> list[int]:
    """Indexes of the signatures whose ``detect`` hits the line (one Hyperscan pass when available)."""
    db = step_database(spec, "SINGLEMATCH")
    if db is None:
        if not spec.gate.search(text):
            return []
        return [i for i, sig in enumerate(spec.signatures) if sig.detector.search(text)]
    hits: list[int] = []
    db.scan(text.encode("utf-8", "replace"), match_event_handler=lambda i, *_: hits.append(i))
    return sorted(hits)




def _fields(text: str, spec: StepSpec, hit: list[int]) -> dict[str, Any]:
    raw: dict[str, str] = {}
    for i in hit:
        sig = spec.signatures[i]
        m = sig.extractor.search(text)
        if m is None:
            continue
        for key, val in m.groupdict().items():
            if val is not None and key not in raw:
                raw[key] = val
    if not raw:
        return {}
    pm = spec.labels["rank_prefix"].search(text)
    if pm and "rank" not in raw:
        raw["rank"] = pm.group("n")
    elif "rank" not in raw and (prefixed := rank_from_line(text)) is not None:
        raw["rank"] = str(prefixed)  # `[default3]:`, `[1,3]<stdout>:`, `3: ` (srun --label)
    return _convert(raw, spec)


def _num(val: str) -> float:
    return float(val.replace(",", ""))


def _clock(val: str) -> float:
    """Seconds of a ``[h:]mm:ss[.ff]`` duration."""
    total = 0.0
    for part in val.strip().split(":"):
        total = total * 60.0 + float(part)
    return total


def _duration(val: str) -> float:
    """Seconds of a duration written with units, e.g. ``2h30m``, ``1h 5m 3s``, ``45 min``."""
    total, num, unit = 0.0, "", ""
    for ch in val.strip().lower() + " ":
        if (ch.isdigit() or ch == ".") and unit:
            total, num, unit = total + float(num) * SECONDS[unit], "", ""
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch.isalpha():
            unit += ch
        elif num and unit:
            total, num, unit = total + float(num) * SECONDS[unit], "", ""
    if num:  # a number without its unit
        raise ValueError(val)
    return total


def _convert(raw: dict[str, str], spec: StepSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        if "iter" in raw and "step" not in raw:
            raw["step"] = raw["iter"]
        for key in INT_FIELDS:
            if key in raw:
                out[key] = int(_num(raw[key]))
        if raw.get("epoch_frac") and "epoch" in out:  # 'epoch': 0.96, the HF Trainer's fractional epoch
            out["epoch_progress"] = out["epoch"] + float(raw["epoch_frac"])
        if "rank_prefix" in raw and "rank" not in out:
            out["rank"] = int(raw["rank_prefix"])
        if "loss_parts" in raw and "loss" not in raw:
            out["loss"] = sum(float(v) for v in raw["loss_parts"].split())
        for key in FLOAT_FIELDS:
            if key in raw:
                out[key] = _num(raw[key]) * SI[raw[f"{key}_si"]] if raw.get(f"{key}_si") else _num(raw[key])
        for key in TIME_FIELDS:
            parts = [raw[f"{key}_p{i}"] for i in range(1, 9) if raw.get(f"{key}_p{i}")]
            if parts and key not in raw:
                out[key] = sum(map(_num, parts)) * SECONDS.get((raw.get(f"{key}_unit") or "s").lower(), 1.0)
            elif key in raw:
                val = _num(raw[key]) * SECONDS.get((raw.get(f"{key}_unit") or "s").lower(), 1.0)
                out[key] = val + _num(raw.get(f"{key}_min") or "0") * 60.0
            elif raw.get(f"{key}_hms"):
                out[key] = _clock(raw[f"{key}_hms"]) + _num(raw.get(f"{key}_days") or "0") * 86400.0
            elif raw.get(f"{key}_dur"):
                out[key] = _duration(raw[f"{key}_dur"])
        rate = raw.get("step_rate") or raw.get("hf_rate")
        if rate and _num(rate) > 0:
            rate_val = _num(rate) * (SI[raw["step_rate_si"]] if raw.get("step_rate") and raw.get("step_rate_si") else 1.0)
            out.setdefault("step_time", 1.0 / rate_val)
            if raw.get("step_rate"):
                out.setdefault("throughput", rate_val)
    except (ValueError, OverflowError, ZeroDivisionError, KeyError):
        return {}
    if raw.get("single"):
        out["world_size"] = 1
    if raw.get("ddp"):
        out["distributed"] = True
    if raw.get("batch"):
        out["batch"] = raw["batch"][:500]
    if raw.get("run_label"):
        label = raw["run_label"].strip()
        out["run"] = label
        ws, ddp = label_world(label, spec)
        if ws is not None:
            out.setdefault("world_size", ws)
        if ddp is not None:
            out.setdefault("distributed", ddp)
    return out


def run_label(source: str, rank: int | None) -> str:
    """The run a per-rank file belongs to: its path with the rank number replaced by ``*``."""
    if rank is None:
        return source
    digits, end = str(rank), len(source)
    while (at := source.rfind(digits, 0, end)) >= 0:
        end = at
        before, after = source[at - 1:at], source[at + len(digits):at + len(digits) + 1]
        if before.isdigit() or after.isdigit():
            continue
        label = f"{source[:at]}*{source[at + len(digits):]}"
        if rank_from_path(label.replace("*", "x")) is None:
            return label
    return source


def _metric(fields: dict[str, Any], source: str, line_no: int, text: str,
            base: str | None = None) -> StepMetric | None:
    keys = set(fields) - {"run", "step", "epoch", "epoch_progress", "steps_per_epoch", "rank", "distributed"}
    if not keys and "steps_per_epoch" not in fields:
        return None
    if fields.get("run") and fields["run"] not in (source, base):
        fields["run"] = f"{source}:{fields['run']}"
    try:
        return StepMetric(provenance=Provenance(probe="steptime", source=source, line=line_no),
                          text=text[:500], **fields)
    except ValueError:
        return None


def _table(line: str, header: list[str] | None, line_no: int, source: str,
           spec: StepSpec, out: list[StepMetric]) -> list[str] | None:
    cells = [c.strip() for c in line.strip("|").split("|")]
    rule, number = pattern_table("steptime_cells")["table_rule"], pattern_table("steptime_cells")["number_with_unit"]
    if not cells or all(rule.match(c) for c in cells if c):
        return header
    field = next((f for f, rx in spec.tables.items() if rx.search(cells[0])), None)
    if field is None:
        return cells if not any(number.fullmatch(c) for c in cells[1:]) else header
    for i, cell in enumerate(cells[1:], start=1):
        m = number.fullmatch(cell)
        if not m:
            continue
        try:
            val = _num(m.group(1)) * SECONDS[m.group(2) or "s"]
        except (ValueError, OverflowError):
            continue
        label = header[i] if header and i < len(header) else f"column {i}"
        fields: dict[str, Any] = {field: val, "run": label}
        ws, ddp = label_world(label, spec)
        if ws is not None:
            fields["world_size"] = ws
        if ddp is not None:
            fields["distributed"] = ddp
        metric = _metric(fields, source, line_no, line)
        if metric is not None:
            out.append(metric)
    return header
