"""`diagnose logs`: run the log probe (one read of each file: logs, dumps, step-time lines) and the engine."""

from __future__ import annotations

import gc
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.analyzers.crossrank import derive
from diagnose.engine import diagnose_evidence
from diagnose.errors import ConfigError
from diagnose.evidence import dump_evidence
from diagnose.output.report import Report, Skipped
from diagnose.probes.logs.probe import LogProbe, log_signatures
from diagnose.vocab import resolve_symptom


def collect_logs(paths: Sequence[Path], rule_dirs: Sequence[Path] = ()) -> tuple[list[Any], list[Skipped], list[str]]:
    """Evidence from every file under ``paths`` (logs, evidence files, step-time lines); the signatures
    of ``rule_dirs/signatures`` (site rules) are scanned with the built-in ones."""
    gc.disable()  # bulk validation of many records: the cyclic GC only rescans a growing heap
    try:
        result = LogProbe(log_signatures(tuple(str(d) for d in rule_dirs))).collect(paths)
    finally:
        gc.enable()
    skipped = [Skipped(source=s.source, reason=s.reason) for s in result.skipped]
    return list(result.evidence), skipped, list(result.notes)


def run_logs(paths: Sequence[Path], symptom: str | None = None, rule_dirs: Sequence[Path] = ()) -> Report:
    """Diagnose the files a failed run left behind."""
    if symptom and not resolve_symptom(symptom):
        raise ConfigError(f"unknown symptom {symptom!r}: use an id from CAUSES.md or hang/slow/oom/crash/diverged/resume")
    evidence, skipped, notes = collect_logs(paths, rule_dirs)
    report = diagnose_evidence(evidence, symptom=symptom, skipped=skipped, notes=notes, command="logs",
                               rule_dirs=rule_dirs)
    return report


def evidence_records(evidence: Sequence[Any]) -> list[dict[str, Any]]:
    """One flat record per piece of evidence (what `--evidence` prints), derived facts included."""
    items = list(evidence)
    derived = derive(items)
    out = []
    for idx, rec in enumerate(dump_evidence([*items, *derived])):
        prov = rec.pop("provenance", {})
        flat: dict[str, Any] = {"kind": rec.pop("kind"), "signature": rec.pop("signature", None),
                                "source": prov.get("source"), "line": prov.get("line"), "rank": rec.pop("rank", None),
                                "text": rec.pop("text", None)}
        if idx >= len(items):
            flat["derived"] = True
        out.append({**flat, **rec})
    return out


def run_evidence(paths: Sequence[Path], rule_dirs: Sequence[Path] = ()) -> str:
    """JSON Lines: every piece of evidence the log scan found under ``paths`` (one per signature and line)."""
    evidence, skipped, _notes = collect_logs(paths, rule_dirs)
    lines = [json.dumps(rec, ensure_ascii=False) for rec in evidence_records(evidence)]
    lines += [json.dumps({"kind": "skipped", "source": s.source, "text": s.reason}) for s in skipped]
    return "\n".join(lines)

