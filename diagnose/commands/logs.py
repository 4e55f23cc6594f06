"""`diagnose logs`: run the log probe (one read of each file: logs, dumps, step-time lines) and the engine."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.engine import diagnose_evidence
from diagnose.output.report import Report, Skipped


def collect_logs(paths: Sequence[Path]) -> tuple[list[Any], list[Skipped], list[str]]:
    """Evidence from every file under ``paths`` (logs, evidence files, step-time lines), one read each."""
    from diagnose.probes.logs.probe import LogProbe

    gc.disable()  # bulk validation of many records: the cyclic GC only rescans a growing heap
    try:
        result = LogProbe().collect(paths)
    finally:
        gc.enable()
    skipped = [Skipped(source=s.source, reason=s.reason) for s in result.skipped]
    return list(result.evidence), skipped, list(result.notes)


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


def run_record(paths: Sequence[Path], redact: bool = True) -> str:
    """The public run record (Markdown) for the run whose files are under ``paths``."""
    from diagnose.commands.record import facts_from_evidence, render_record

    evidence, skipped, notes = collect_logs(paths)
    report = diagnose_evidence(evidence, skipped=skipped, notes=notes, command="record")
    return render_record(report, facts_from_evidence(evidence), redact=redact)
