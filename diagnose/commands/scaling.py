"""`diagnose scaling PATH...`: step logs, profiler traces and run records in, a report with ``scaling`` out.

A run record is a JSON or YAML mapping (or a list of them) with some of
``world_size, local_batch, accumulation, precision, step_time, data_time, comm_time,
compute_time, epoch_time, steps_per_epoch, lr, num_workers, cpu_cores, threads``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.engine import diagnose_evidence
from diagnose.evidence import Provenance, ScalingFact, StepMetric
from diagnose.output.report import Report, Skipped
from diagnose.probes.files import walk
from diagnose.probes.steptime.probe import parse_step_lines
from diagnose.probes.steptime.profiler_trace import load_trace, parse_profiler_trace

__all__ = ["run_scaling", "collect_scaling_evidence", "read_run_records", "render_scaling_table"]

MAX_TEXT = 512 << 20
_ALIASES = {
    "world_size": ("world_size", "n_gpus", "num_gpus", "gpus", "nproc"),
    "local_batch": ("local_batch", "batch_size", "per_device_batch", "per_device_train_batch_size", "micro_batch"),
    "accumulation": ("accumulation", "grad_accum", "gradient_accumulation_steps", "accumulation_steps"),
    "step_time": ("step_time", "step_time_s"), "data_time": ("data_time",), "comm_time": ("comm_time",),
    "compute_time": ("compute_time",), "sync_time": ("sync_time",), "epoch_time": ("epoch_time",),
    "steps_per_epoch": ("steps_per_epoch",), "lr": ("lr", "learning_rate"), "throughput": ("throughput",),
}
_RECORD_KEYS = {k for names in _ALIASES.values() for k in names} | {"precision", "step_time_ms"}


def run_scaling(paths: list[Path], symptom: str | None = None, rule_dirs: Sequence[Path] = ()) -> Report:
    """Read every path, analyze the step times and batch contract, and return the report."""
    evidence, skipped, records = collect_scaling_evidence(paths)
    notes = [] if evidence else ["no step times, profiler traces or run records found"]
    report = diagnose_evidence(evidence, symptom=symptom, skipped=skipped, notes=notes, command="scaling",
                                rule_dirs=rule_dirs)
    report.scaling = {**(report.scaling or analyze_scaling(evidence).summary), "records": records}
    return report


def collect_scaling_evidence(paths: list[Path]) -> tuple[list[Any], list[Skipped], list[dict[str, Any]]]:
    """StepMetrics (and facts from run records) of every file under ``paths``, what was skipped, the records."""
    files, skips = walk([Path(p) for p in paths])
    skipped = [Skipped(source=s.source, reason=s.reason) for s in skips]
    evidence: list[Any] = []
    records: list[dict[str, Any]] = []
    for path in files:
        try:
            found = _read_one(path, records)
        except (OSError, ValueError) as exc:
            skipped.append(Skipped(source=str(path), reason=str(exc)[:200]))
            continue
        if found is None:
            skipped.append(Skipped(source=str(path), reason="no step times, trace or run record"))
        else:
            evidence.extend(found)
    return evidence, skipped, records


def _read_one(path: Path, records: list[dict[str, Any]]) -> list[Any] | None:
    name = path.name.lower()
    if name.endswith((".json", ".json.gz")):
        try:
            load_trace(path)
        except ValueError:
            pass
        else:
            return parse_profiler_trace(path) or None
    if name.endswith((".json", ".yaml", ".yml")):
        recs = read_run_records(path)
        if recs:
            records.extend(r for r, _ in recs)
            return [e for _, evs in recs for e in evs]
    if path.stat().st_size > MAX_TEXT:
        raise ValueError("text file too large")
    with path.open("rb") as fh:
        if b"\0" in fh.read(8192):
            raise ValueError("binary file")
    with path.open(encoding="utf-8", errors="replace") as fh:
        found = parse_step_lines(((i, line.rstrip("\n")) for i, line in enumerate(fh, 1)), str(path))
    return found or None


def read_run_records(path: Path) -> list[tuple[dict[str, Any], list[Any]]]:
    """Run records in a JSON/YAML file, each with its StepMetric (and CPU-threads fact)."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"not a run record: {exc}") from None
    items = data.get("runs", [data]) if isinstance(data, dict) else data if isinstance(data, list) else []
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and _RECORD_KEYS & set(item):
            out.append((item, _record_evidence(item, path, i)))
    return out


def _record_evidence(item: dict[str, Any], path: Path, index: int) -> list[Any]:
    fields: dict[str, Any] = {}
    for field, names in _ALIASES.items():
        val = next((item[n] for n in names if isinstance(item.get(n), (int, float))), None)
        if val is not None:
            fields[field] = int(val) if field in ("world_size", "local_batch", "accumulation", "steps_per_epoch") else float(val)
    if isinstance(item.get("step_time_ms"), (int, float)):
        fields.setdefault("step_time", item["step_time_ms"] / 1e3)
    run = str(item.get("run") or item.get("name") or f"{path.name}#{index + 1}")
    prov = Provenance(probe="run_record", source=str(path), line=index + 1)
    text = ", ".join(f"{k}={v}" for k, v in item.items() if not isinstance(v, (dict, list)))[:500]
    out: list[Any] = [StepMetric(run=run, provenance=prov, text=text, **fields)]
    cores, workers = item.get("cpu_cores"), item.get("num_workers")
    threads = item.get("threads") or item.get("omp_num_threads")
    if isinstance(cores, int) and cores > 0 and isinstance(threads, int):
        procs = item.get("procs_per_node") or fields.get("world_size") or 1
        per_core = procs * (1 + (workers or 0)) * threads / cores
        out.append(ScalingFact(name="cpu_threads_per_core", value=round(per_core, 2), run=run,
                               world_size=fields.get("world_size"), provenance=prov,
                               text=f"{procs} ranks x (1 + {workers or 0} workers) x {threads} threads on {cores} cores"))
    return out


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f} ms"


def render_scaling_table(summary: dict[str, Any]) -> str:
    """Plain-text tables of the step-time terms of each run and the efficiency across runs."""
    lines: list[str] = []
    runs = summary.get("runs") or []
    if runs:
        lines.append("step time = max(compute, comm) + input + sync, per run (median of steady steps):")
        lines.append(f"  {'run':<40} {'N':>4} {'step':>10} {'term':<8} {'time':>10} {'share':>6}  limit")
        for row in runs:
            name = str(row.get("run") or "")[-40:]
            terms = row.get("terms") or {}
            shares = row.get("shares") or {}
            head = f"  {name:<40} {row.get('world_size') or '?':>4} {_ms(row.get('step_time')):>10}"
            if not terms:
                lines.append(f"{head} {'(no breakdown)':<8}{'':>18}  {row.get('limit') or '-'}")
            for i, (term, val) in enumerate(terms.items()):
                share = f"{shares[term]:.0%}" if term in shares else "-"
                lead = head if i == 0 else " " * len(head)
                lines.append(f"{lead} {term:<8} {_ms(val):>10} {share:>6}  {row.get('limit') or '-' if i == 0 else ''}")
            if row.get("stragglers"):
                lines.append(f"  {'':<40} stragglers: rank(s) {', '.join(map(str, row['stragglers']))}")
    for row in summary.get("efficiency") or []:
        if row.get("eta") is None:
            continue
        line = (f"eta = T1/(N*TN) = {row['t1']:.4g} s/({row['world_size']} x {row['tn']:.4g} s) = {row['eta']:.1%}"
                f"  [{row.get('basis')}: {row.get('run')} vs {row.get('baseline')}]")
        if row.get("eta_per_sample") is not None:
            line += f"; per sample {row['eta_per_sample']:.1%}"
        lines.append(line)
    move = summary.get("move") or {}
    if move.get("first"):
        lines.append(f"limit: {summary.get('limit')}: first move: {move['first']} ({move.get('scale_out', '')})")
    return "\n".join(lines)
