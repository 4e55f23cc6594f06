"""The checkpoint probe: what a checkpoint file or folder holds and lacks, read without executing it.

`inspect_checkpoint(path)` recognises torch.save files (zip and legacy), raw
pickles, Lightning `.ckpt`, safetensors, and folders written by
torch.distributed.checkpoint, DeepSpeed, the Hugging Face Trainer and
accelerate, and a folder of step folders (it reads the latest and says when
the latest is torn). `CheckpointProbe` turns the result into evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from diagnose.evidence import CheckpointContent, Provenance
from diagnose.probes.checkpoint.files import FileContent
from diagnose.probes.checkpoint.formats import Found, detect, read_dcp, read_deepspeed, read_hf
from diagnose.probes.checkpoint.patterns import pattern
from diagnose.probes.checkpoint.pickle_tree import TensorMeta
from diagnose.probes.checkpoint.states import (
    STATES,
    classify,
    looks_like_state_dict,
    missing_states,
    sharded_globals,
    tensor_items,
)
from diagnose.probes.files import Skip
from diagnose.probes.logs.probe import ProbeResult

_FILE_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt", ".safetensors", ".pkl", ".tar")


@dataclass
class CheckpointInfo:
    """What one checkpoint holds: the report's `checkpoint` section, before rendering."""

    path: str
    format: str
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    keys: dict[str, list[str]] = field(default_factory=dict)
    world_size: int | None = None
    suspicious_globals: list[str] = field(default_factory=list)
    dangerous_globals: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tensors: dict[str, TensorMeta] = field(default_factory=dict, repr=False)
    sharded: bool = False
    error: str | None = None


def inspect_checkpoint(path: Path) -> CheckpointInfo:
    """Inspect a checkpoint file or folder; bad content becomes `error`/`problems`, never an exception."""
    path = Path(path)
    try:
        if path.is_dir():
            steps = _step_dirs(path)
            if steps and detect(path) is None:
                return _latest_step(path, steps)
            return _finish(path, _read_folder(path))
        return _finish(path, _read_single(path))
    except Exception as exc:  # last resort for hostile content: a result, never a crash
        info = CheckpointInfo(str(path), "unknown", error=f"{type(exc).__name__}: {exc}"[:300])
        info.issues = ["unreadable"]
        return info


def _read_single(path: Path) -> Found:
    found = Found("unknown")
    content = found.read(path)
    root = content.root
    found.format = _single_format(content)
    if found.format == "safetensors" or (isinstance(root, dict) and looks_like_state_dict(root)):
        found.tensors.update(tensor_items(root))
    elif isinstance(root, dict):
        for key in ("state_dict", "model", "model_state_dict", "module", "net"):
            if isinstance(root.get(key), dict):
                found.tensors.update(tensor_items(root[key]))
                break
    for state, keys in classify(root).items():
        found.add(state, *keys)
    _sharding_from_globals(content, found)
    return found


def _single_format(content: FileContent) -> str:
    root = content.root
    if isinstance(root, dict):
        keys = {str(k) for k in root}
        if "pytorch-lightning_version" in keys or ("state_dict" in keys and keys & {"loops", "optimizer_states"}):
            return "lightning"
        if "ds_version" in keys or {"module", "dp_world_size"} <= keys:
            return "deepspeed"
    return content.kind


def _sharding_from_globals(content: FileContent, found: Found) -> None:
    shard = sharded_globals(content.globals)
    flat = [k for k in found.tensors if k.endswith("_flat_param")]
    if shard or flat:
        found.sharded = True
        found.notes.append(f"sharded state dict ({', '.join((shard or flat)[:3])}): a per-rank file, "
                           "not the full model")


def _read_folder(folder: Path) -> Found:
    fmt = detect(folder)
    if fmt == "dcp":
        return read_dcp(folder)
    if fmt == "deepspeed":
        return read_deepspeed(folder)
    if fmt in ("hf-trainer", "accelerate"):
        return read_hf(folder, fmt)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in _FILE_SUFFIXES)
    if len(files) == 1:
        found = _read_single(files[0])
        found.notes.append(f"read {files[0].name}")
        return found
    found = Found("folder")
    for f in files:
        sub = _read_single(f)
        found.files.extend(sub.files)
        found.issues.extend(c for c in sub.issues if c not in found.issues)
        found.problems.extend(sub.problems)
        found.tensors.update(sub.tensors)
        for state, keys in sub.states.items():
            found.add(state, *(f"{f.name}:{k}" for k in keys))
    if not files:
        found.problem("unreadable", "no checkpoint files in this folder")
    return found


def _step_dirs(folder: Path) -> list[tuple[int, Path]]:
    out = []
    for p in folder.iterdir():
        m = pattern("step_folder").match(p.name)
        if p.is_dir() and m:
            out.append((int(m.group(1)), p))
    return sorted(out)


def _latest_step(folder: Path, steps: list[tuple[int, Path]]) -> CheckpointInfo:
    """Read the latest step folder; when it is torn, say so and name the last complete one."""
    latest = inspect_checkpoint(steps[-1][1])
    latest.notes.insert(0, f"{len(steps)} step folders; read the latest, {steps[-1][1].name}")
    if latest.problems or latest.error:
        good = next((s for _, s in reversed(steps[:-1]) if not inspect_checkpoint(s).problems), None)
        where = f"; last complete: {good.name}" if good else "; no earlier complete step"
        latest.problems.insert(0, f"torn latest step: {steps[-1][1].name}{where}")
        latest.issues.insert(0, "torn_step")
    latest.path = str(folder)
    return latest


def _finish(path: Path, found: Found) -> CheckpointInfo:
    info = CheckpointInfo(str(path), found.format, world_size=found.world_size, sharded=found.sharded)
    info.keys = {s: found.states[s] for s in sorted(found.states, key=_order)}
    info.present = list(info.keys)
    unreadable = not info.present and bool(found.issues)
    info.missing = [] if unreadable else missing_states(set(info.present), sharded=found.sharded)
    if unreadable:
        found.notes.append("contents unknown: nothing readable, so no state is reported missing")
    for content in found.files:
        info.suspicious_globals.extend(g for g in content.suspicious if g not in info.suspicious_globals)
        info.dangerous_globals.extend(g for g in content.dangerous if g not in info.dangerous_globals)
    info.problems, info.issues = found.problems, found.issues
    info.notes, info.tensors = found.notes, found.tensors
    errors = [c.error for c in found.files if c.error]
    if errors and not info.present:
        info.error = errors[0]
    return info


def _order(state: str) -> int:
    return STATES.index(state) if state in STATES else len(STATES)


def to_evidence(info: CheckpointInfo) -> CheckpointContent:
    """The typed evidence rules read."""
    text = "; ".join([f"{info.format} at {info.path}", *info.problems[:3]])
    return CheckpointContent(
        format=info.format, present=tuple(info.present), missing=tuple(info.missing),
        world_size=info.world_size, suspicious_globals=tuple(info.suspicious_globals),
        issues=tuple(info.issues), provenance=Provenance(probe="checkpoint", source=info.path), text=text,
    )


class CheckpointProbe:
    """Reads checkpoint files and folders (never executing pickled code)."""

    name: ClassVar[str] = "checkpoint"
    produces: ClassVar[frozenset[str]] = frozenset({"checkpoint_content"})

    def applies_to(self, paths: Iterable[Path]) -> bool:
        return any(Path(p).exists() for p in paths)

    def collect(self, paths: Iterable[Path]) -> Any:
        """A `ProbeResult` with one evidence record per existing path; absent paths are skipped."""
        out = ProbeResult()
        for path in map(Path, paths):
            if not path.exists():
                out.skipped.append(Skip(str(path), "no such file or folder"))
                continue
            info = inspect_checkpoint(path)
            out.evidence.append(to_evidence(info))
            out.notes.extend(f"{info.path}: {n}" for n in info.notes)
        return out
