"""`diagnose logs`: run the log probe (and step-time analysis when present) and the engine."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.engine import diagnose_evidence
from diagnose.output.report import Report, Skipped

STEP_PARSE_MAX_BYTES = 4 << 20


def collect_logs(paths: Sequence[Path]) -> tuple[list[Any], list[Skipped], list[str]]:
    """Evidence from every file under ``paths`` (logs, evidence files, step-time lines)."""
    from diagnose.probes.logs.probe import LogProbe

    gc.disable()  # bulk validation of many records: the cyclic GC only rescans a growing heap
    try:
        result = LogProbe().collect(paths)
    finally:
        gc.enable()
    evidence = list(result.evidence)
    notes = list(result.notes)
    evidence += _step_metrics(result.scanned, notes)
    skipped = [Skipped(source=s.source, reason=s.reason) for s in result.skipped]
    return evidence, skipped, notes


def _step_metrics(files: Sequence[str], notes: list[str]) -> list[Any]:
    """Step-time / loss lines of the smaller text files (the per-line parser is too slow for huge logs)."""
    from diagnose.probes.steptime.probe import parse_step_lines

    out: list[Any] = []
    big = 0
    for name in files:
        path = Path(name)
        try:
            if path.stat().st_size > STEP_PARSE_MAX_BYTES:
                big += 1
                continue
            with path.open(encoding="utf-8", errors="replace") as fh:
                out += parse_step_lines(((i, line.rstrip("\n")) for i, line in enumerate(fh, 1)), name)
        except (OSError, ValueError):
            continue
    if big:
        notes.append(f"step-time lines not parsed in {big} file(s) over {STEP_PARSE_MAX_BYTES >> 20} MiB: "
                     "use `diagnose scaling` on them")
    return out


def run_logs(paths: Sequence[Path], symptom: str | None = None, rule_dirs: Sequence[Path] = ()) -> Report:
    """Diagnose the files a failed run left behind."""
    from diagnose.errors import ConfigError
    from diagnose.vocab import resolve_symptom

    if symptom and not resolve_symptom(symptom):
        raise ConfigError(f"unknown symptom {symptom!r}: use an id from CAUSES.md or hang/slow/oom/crash/diverged/resume")
    evidence, skipped, notes = collect_logs(paths)
    report = diagnose_evidence(evidence, symptom=symptom, skipped=skipped, notes=notes, command="logs",
                               rule_dirs=rule_dirs)
    return report

