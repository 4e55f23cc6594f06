"""`diagnose checkpoint PATH [PATH2]`: what a checkpoint holds and lacks, and how two differ.

Nothing in a checkpoint is loaded or executed: pickles are read by the inert
inspector of `diagnose.probes.checkpoint.pickle_inspect`, and a pickle that names
callables outside the allow-list is reported with those names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.engine import diagnose_evidence
from diagnose.errors import ConfigError
from diagnose.evidence import CheckpointContent
from diagnose.output.report import Report
from diagnose.probes.checkpoint.compare import compare
from diagnose.probes.checkpoint.model import model_state
from diagnose.probes.checkpoint.probe import CheckpointInfo, inspect_checkpoint, to_evidence


def checkpoint_section(info: CheckpointInfo) -> dict[str, Any]:
    """The report's `checkpoint` object for one checkpoint (CONTRACT.md fields first)."""
    return {
        "format": info.format, "present": info.present, "missing": info.missing,
        "world_size": info.world_size, "path": info.path, "keys": info.keys,
        "suspicious_globals": info.suspicious_globals, "dangerous_globals": info.dangerous_globals,
        "sharded": info.sharded, "issues": info.issues, "problems": info.problems,
        "notes": info.notes, "error": info.error, "tensors": len(info.tensors),
    }


def _is_sharded(info: CheckpointInfo) -> bool:
    """Whether the checkpoint is known to hold per-rank shards (DCP, ShardedTensor/DTensor, per-rank files)."""
    return bool(info.sharded or info.world_size)


def _mismatch_issues(diff: dict[str, Any], world_sizes: tuple[int | None, int | None] = (None, None)) -> list[str]:
    issues = []
    if diff["only_in_first_count"] or diff["only_in_second_count"]:
        issues.append("key_mismatch")
    elif not diff["raw_keys_match"]:
        issues.append("prefix_mismatch")
    if diff["shape_count"]:
        issues.append("shape_mismatch")
    if diff["dtype_count"]:
        issues.append("dtype_mismatch")
    if all(world_sizes) and world_sizes[0] != world_sizes[1]:
        issues.append("world_size_mismatch")
    return issues


def _examples(keys: list[str], count: int) -> str:
    more = f" and {count - len(keys[:3])} more" if count > 3 else ""
    return f" ({', '.join(keys[:3])}{more})" if keys else ""


def _summary(diff: dict[str, Any], labels: tuple[str, str] = ("the first", "the second")) -> str:
    a, b = diff["only_in_first_count"], diff["only_in_second_count"]
    parts = [f"{a} key(s) only in {labels[0]}{_examples(diff['only_in_first'], a)}, "
             f"{b} only in {labels[1]}{_examples(diff['only_in_second'], b)}, "
             f"{diff['shape_count']} shape mismatch(es)"
             + _examples([f"{s['key']} {s['first']} vs {s['second']}" for s in diff["shape"]], diff["shape_count"])]
    if diff["dtype_count"]:
        parts.append(f"{diff['dtype_count']} dtype mismatch(es)" + _examples(
            [f"{d['key']} {d['first']} vs {d['second']}" for d in diff["dtype"]], diff["dtype_count"]))
    parts += diff["explanation"]
    return "; ".join(parts)


def _comparison_evidence(info: CheckpointInfo, against: str, diff: dict[str, Any], issues: list[str],
                         labels: tuple[str, str] = ("the first", "the second")) -> CheckpointContent | None:
    """`info`'s evidence with the comparison's issue codes, or None when the states match."""
    if not issues:
        return None
    base = to_evidence(info)
    return base.model_copy(update={"issues": (*base.issues, *issues),
                                   "text": f"{info.path} against {against}: {_summary(diff, labels)}"})


def _model_mismatches(info: CheckpointInfo, spec: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Compare the checkpoint's model state with the model `spec` builds (user code runs here)."""
    state = model_state(spec)
    notes = [f"--model {spec}: {n}" for n in state.notes]
    if not info.tensors:
        notes.append(f"{info.path} holds no model tensors to compare with --model {spec}")
        return None, notes
    diff = compare(info.tensors, state.tensors, labels=("the checkpoint", "the model"))
    diff.update(first=info.path, second=f"model {spec}", model=spec, model_device=state.device,
                unexpected_keys=diff["only_in_first"], unexpected_count=diff["only_in_first_count"],
                missing_keys=diff["only_in_second"], missing_count=diff["only_in_second_count"])
    if diff["dtype_count"]:
        first = diff["dtype"][0]
        notes.append(f"{diff['dtype_count']} tensor(s) differ in dtype from the model (e.g. {first['key']}: "
                     f"{first['first']} in the checkpoint, {first['second']} in the model); "
                     "load_state_dict casts them to the model's dtype")
    if info.sharded and any(t.shape is None for t in info.tensors.values()):
        notes.append(f"{info.path} is a per-rank sharded file: its keys were compared with the model, "
                     "not the shapes it does not record")
    return diff, notes


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


def _check_named(path: Path) -> None:
    """A checkpoint named on the command line exists, is a file or folder, and can be read (else exit 2)."""
    try:
        if not path.exists():
            raise ConfigError(f"no such checkpoint: {path}")
        is_dir = path.is_dir()
        if not (is_dir or path.is_file()):
            raise ConfigError(f"not a checkpoint file or folder (a FIFO, socket or device is never read): {path}")
    except PermissionError:
        raise ConfigError(f"permission denied: cannot reach {path}") from None
    if not os.access(path, os.R_OK | (os.X_OK if is_dir else 0)):
        raise ConfigError(f"permission denied: cannot read {path}")


def run_checkpoint(paths: Sequence[Path], model: str | None = None, rule_dirs: Sequence[Path] = ()) -> Report:
    """Inspect one checkpoint (or compare two, or one with the model `MODULE:FACTORY` builds).

    With `model`, the user's model code is imported and run (on the meta device when it
    allows); the checkpoint itself is still only inspected, never unpickled.
    """
    if not 1 <= len(paths) <= 2:
        raise ConfigError("diagnose checkpoint takes one checkpoint, or two to compare")
    if model is not None and len(paths) != 1:
        raise ConfigError("--model compares one checkpoint with the model; give a single checkpoint")
    for path in paths:
        _check_named(Path(path))
    infos = [inspect_checkpoint(Path(p)) for p in paths]
    evidence: list[Any] = [to_evidence(i) for i in infos]
    notes = _notes(infos)
    diff, extra = None, None
    if len(infos) == 2:
        diff = compare(infos[0].tensors, infos[1].tensors, sharded=(_is_sharded(infos[0]), _is_sharded(infos[1])))
        issues = _mismatch_issues(diff, (infos[0].world_size, infos[1].world_size))
        extra = _comparison_evidence(infos[1], infos[0].path, diff, issues)
    elif model is not None:
        diff, model_notes = _model_mismatches(infos[0], model)
        notes += model_notes
        extra = None if diff is None else _comparison_evidence(
            infos[0], f"model {model}", diff, _mismatch_issues(diff), ("the checkpoint", "the model"))
    if extra is not None:
        evidence[-1] = extra
    report = diagnose_evidence(evidence, notes=notes, command="checkpoint", rule_dirs=rule_dirs)
    section = checkpoint_section(infos[0])
    if len(infos) == 2:
        section["other"] = checkpoint_section(infos[1])
    if len(infos) == 2 or model is not None:
        section["mismatches"] = diff
    report.checkpoint = section
    return report
