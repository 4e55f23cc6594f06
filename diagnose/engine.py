"""Evaluate the rule set over evidence and build the report (stub, being written)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from diagnose.report import Report, Skipped


def diagnose_evidence(
    evidence: Sequence[Any],
    *,
    symptom: str | None = None,
    skipped: Iterable[Skipped] = (),
    notes: Iterable[str] = (),
    command: str | None = None,
    rule_dirs: Sequence[Path] = (),
) -> Report:
    """Run every rule over the evidence and return the ranked report."""
    return Report(command=command, skipped=list(skipped), notes=list(notes))
