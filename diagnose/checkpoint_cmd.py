"""`diagnose checkpoint PATH [PATH2]`: what a checkpoint holds and lacks, and how two differ.

Nothing in a checkpoint is loaded or executed: pickles are read by the inert
inspector of `diagnose.probes.pickle_inspect`, and a pickle that names
callables outside the allow-list is reported with those names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose import predicates_checkpoint  # noqa: F401  (registers the checkpoint predicates)
from diagnose.engine import diagnose_evidence
from diagnose.errors import ConfigError
from diagnose.evidence import CheckpointContent
from diagnose.probes.checkpoint import CheckpointInfo, inspect_checkpoint, to_evidence
from diagnose.probes.checkpoint_compare import compare
from diagnose.report import Report


def checkpoint_section(info: CheckpointInfo) -> dict[str, Any]:
    """The report's `checkpoint` object for one checkpoint (CONTRACT.md fields first)."""
    return {
        "format": info.format, "present": info.present, "missing": info.missing,
        "world_size": info.world_size, "path": info.path, "keys": info.keys,
        "suspicious_globals": info.suspicious_globals, "dangerous_globals": info.dangerous_globals,
        "sharded": info.sharded, "issues": info.issues, "problems": info.problems,
        "notes": info.notes, "error": info.error, "tensors": len(info.tensors),
    }


def _mismatch_issues(diff: dict[str, Any], first: CheckpointInfo, second: CheckpointInfo) -> list[str]:
    issues = []
    if diff["only_in_first_count"] or diff["only_in_second_count"]:
        issues.append("key_mismatch")
    elif not diff["raw_keys_match"]:
        issues.append("prefix_mismatch")
    if diff["shape_count"]:
        issues.append("shape_mismatch")
    if diff["dtype_count"]:
        issues.append("dtype_mismatch")
    if first.world_size and second.world_size and first.world_size != second.world_size:
        issues.append("world_size_mismatch")
    return issues


def _summary(diff: dict[str, Any]) -> str:
    parts = [f"{diff['only_in_first_count']} key(s) only in the first, "
             f"{diff['only_in_second_count']} only in the second, {diff['shape_count']} shape mismatch(es)"]
    parts += diff["explanation"]
    return "; ".join(parts)


def _comparison_evidence(first: CheckpointInfo, second: CheckpointInfo,
                         diff: dict[str, Any]) -> CheckpointContent | None:
    issues = _mismatch_issues(diff, first, second)
    if not issues:
        return None
    base = to_evidence(second)
    return base.model_copy(update={"issues": (*base.issues, *issues),
                                   "text": f"{second.path} against {first.path}: {_summary(diff)}"})


def _notes(infos: Sequence[CheckpointInfo]) -> list[str]:
    notes = []
    for info in infos:
        if info.suspicious_globals:
            notes.append(f"{info.path}: not loaded: its pickle names callables outside the allow-list "
                         f"({', '.join(info.dangerous_globals or info.suspicious_globals)}); "
                         "torch.load(weights_only=False) would import and may run them")
        if info.error:
            notes.append(f"{info.path}: {info.error}")
    return notes


def run_checkpoint(paths: Sequence[Path]) -> Report:
    """Inspect one checkpoint (or compare two) and diagnose what a resume from it would lack."""
    if not 1 <= len(paths) <= 2:
        raise ConfigError("diagnose checkpoint takes one checkpoint, or two to compare")
    for path in paths:
        if not Path(path).exists():
            raise ConfigError(f"no such checkpoint: {path}")
    infos = [inspect_checkpoint(Path(p)) for p in paths]
    evidence: list[Any] = [to_evidence(i) for i in infos]
    diff = None
    if len(infos) == 2:
        diff = compare(infos[0].tensors, infos[1].tensors)
        extra = _comparison_evidence(infos[0], infos[1], diff)
        if extra is not None:
            evidence[1] = extra
    report = diagnose_evidence(evidence, notes=_notes(infos), command="checkpoint")
    section = checkpoint_section(infos[0])
    if len(infos) == 2:
        section["other"] = checkpoint_section(infos[1])
        section["mismatches"] = diff
    report.checkpoint = section
    return report
