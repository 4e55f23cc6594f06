"""Checkpoint folders: torch.distributed.checkpoint, DeepSpeed, Hugging Face Trainer and accelerate.

Each reader fills a `Found` with the states it can show (state -> example keys
or files), the world size the folder was written by, and the problems that
make it unusable (missing shards, short files). Only metadata is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.probes.checkpoint.files import FileContent, read_file, read_regular_text
from diagnose.probes.checkpoint.patterns import pattern
from diagnose.probes.checkpoint.pickle_tree import Obj, TensorMeta
from diagnose.probes.checkpoint.states import EXAMPLES, classify, tensor_items

_DISTCP = pattern("dcp_shard_file")
_ZERO = pattern("deepspeed_zero_shard")
_MP = pattern("deepspeed_model_states")
_RNG = pattern("trainer_rng_state")
_ACC_RNG = pattern("accelerate_rng_state")
_HF_MODEL = pattern("hf_model_file")


@dataclass
class Found:
    """What a folder reader found."""

    format: str
    states: dict[str, list[str]] = field(default_factory=dict)
    world_size: int | None = None
    problems: list[str] = field(default_factory=list)
    files: list[FileContent] = field(default_factory=list)
    tensors: dict[str, TensorMeta] = field(default_factory=dict)
    sharded: bool = False
    notes: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)

    def problem(self, code: str, message: str) -> None:
        """Record a problem under one of the issue codes of `CheckpointContent.issues`."""
        self.problems.append(message)
        if code not in self.issues:
            self.issues.append(code)

    def add(self, state: str, *keys: str) -> None:
        bucket = self.states.setdefault(state, [])
        bucket.extend(k for k in keys if k not in bucket)
        del bucket[EXAMPLES:]

    def read(self, path: Path) -> FileContent:
        content = read_file(path)
        self.files.append(content)
        if content.error:
            code = "truncated" if "truncated" in content.error else "unreadable"
            self.problem(code, f"{path.name}: {content.error}")
        for message in content.problems:
            self.problem("missing_shard" if "missing" in message else "truncated", f"{path.name}: {message}")
        return content


def detect(folder: Path) -> str | None:
    """The folder format, from the names of its files."""
    names = {p.name for p in folder.iterdir()}
    if ".metadata" in names or any(_DISTCP.match(n) for n in names):
        return "dcp"
    if "latest" in names or any(_MP.match(n) or _ZERO.match(n) for n in names):
        return "deepspeed"
    if "trainer_state.json" in names:
        return "hf-trainer"
    if any(_ACC_RNG.match(n) for n in names) or {"optimizer.bin", "scheduler.bin"} & names:
        return "accelerate"
    return None


def _sane(value: Any, limit: int = 1 << 62) -> bool:
    """An int a real checkpoint could hold (hostile files may claim anything)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < limit


def _field(obj: Any, name: str) -> Any:
    return obj.fields().get(name) if isinstance(obj, Obj) else None


def read_dcp(folder: Path) -> Found:
    """`.metadata` (a pickle of Metadata) names every tensor, its chunks and the file holding each."""
    found = Found("dcp", sharded=True)
    shards = {p.name: p.stat().st_size for p in folder.iterdir() if _DISTCP.match(p.name)}
    meta_path = folder / ".metadata"
    if not meta_path.exists():
        found.problem("missing_shard", f".metadata is missing beside {len(shards)} shard file(s) (torn save)")
        found.world_size = _dcp_world(shards) or None
        return found
    content = found.read(meta_path)
    meta = content.root
    sd_meta = _field(meta, "state_dict_metadata")
    if not isinstance(sd_meta, dict):
        found.problem("unreadable", ".metadata does not hold a DCP Metadata")
        return found
    found.add("sharding", ".metadata")
    tree: dict[str, Any] = {}
    for fqn, entry in sd_meta.items():
        size = _field(entry, "size")
        shape = tuple(size) if isinstance(size, (tuple, list)) else None
        leaf = TensorMeta(shape, _dcp_dtype(entry)) if size else "bytes"
        _insert(tree, str(fqn).split("."), leaf)
        if isinstance(leaf, TensorMeta) and str(fqn).startswith(("model.", "app.model.")):
            found.tensors[str(fqn).split("model.", 1)[1]] = leaf
    for state, keys in classify(tree).items():
        found.add(state, *keys)
    _check_dcp_storage(_field(meta, "storage_data"), shards, found)
    return found


def _dcp_dtype(entry: Any) -> str | None:
    """dtype from TensorProperties: a (dtype, layout, ...) state tuple, or a dict with `dtype`."""
    props = _field(entry, "properties")
    if not isinstance(props, Obj):
        return None
    state = props.state
    dtype = state[0] if isinstance(state, tuple) and len(state) > 2 else props.fields().get("dtype")
    if isinstance(dtype, Obj) and dtype.cls.startswith("torch.") and not dtype.args:
        return dtype.cls.removeprefix("torch.")
    return None


def _insert(tree: dict[str, Any], parts: list[str], leaf: Any) -> None:
    node = tree
    for part in parts[:-1]:
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, dict):
            return
        node = nxt
    node[parts[-1]] = leaf


def _dcp_world(names: Any) -> int:
    ranks = {int(m.group(1)) for n in names if (m := _DISTCP.match(n))}
    return max(ranks) + 1 if ranks else 0


def _check_dcp_storage(storage: Any, shards: dict[str, int], found: Found) -> None:
    """Every file the metadata references exists and is long enough; no stray shard files."""
    needed: dict[str, int] = {}
    for info in (storage or {}).values():
        fields = info.fields() if isinstance(info, Obj) else {}
        rel, off, length = fields.get("relative_path"), fields.get("offset"), fields.get("length")
        if isinstance(rel, str) and _sane(off) and _sane(length):
            needed[rel] = max(needed.get(rel, 0), off + length)
    found.world_size = _dcp_world(needed) or None
    for rel, end in sorted(needed.items()):
        if rel not in shards:
            found.problem("missing_shard", f"shard {rel} referenced by .metadata is missing")
        elif shards[rel] < end:
            found.problem("truncated", f"shard {rel} holds {shards[rel]} bytes, .metadata needs {end} (truncated)")
    stray = sorted(set(shards) - set(needed))
    if stray:
        found.problem("stray_shard", f"shard file(s) {', '.join(stray)} are not in .metadata "
                              f"(written by another save, world size {_dcp_world(shards)})")


def read_deepspeed(folder: Path) -> Found:
    """`latest` names the tag; the tag folder holds model states per MP rank and ZeRO shards per DP rank."""
    found = Found("deepspeed")
    latest = folder / "latest"
    if latest.is_file():
        tag = read_regular_text(latest).strip()[:200]
        if not (folder / tag).is_dir():
            found.problem("torn_step", f"'latest' names {tag!r}, which does not exist (torn save)")
            return found
        found.notes.append(f"latest tag: {tag}")
        folder = folder / tag
    names = sorted(p.name for p in folder.iterdir())
    model_files = [n for n in names if _MP.match(n)]
    zero = {int(m.group(1)) for n in names if (m := _ZERO.match(n))}
    if not model_files:
        found.problem("missing_shard", "no mp_rank_XX_model_states.pt in the tag folder")
        return found
    root = found.read(folder / model_files[0]).root
    root = root if isinstance(root, dict) else {}
    for state, keys in classify({k: v for k, v in root.items() if k != "ds_config"}).items():
        found.add(state, *(f"{model_files[0]}:{k}" for k in keys))
    for key, tensor in tensor_items(root.get("module"), limit=200_000):
        found.tensors[key] = tensor
    dp = root.get("dp_world_size")
    found.world_size = dp if _sane(dp, 1 << 20) and dp > 0 else (len(zero) or None)
    if zero:
        found.sharded = True
        found.add("optimizer", *(n for n in names if _ZERO.match(n)))
        found.add("sharding", *(n for n in names if _ZERO.match(n)))
        _deepspeed_zero(folder, names, zero, found)
    return found


def _deepspeed_zero(folder: Path, names: list[str], zero: set[int], found: Found) -> None:
    """ZeRO writes one optimizer shard per DP rank: all of them must be there."""
    want = found.world_size or (max(zero) + 1)
    lost = sorted(set(range(want)) - zero)
    if lost:
        found.problem("missing_shard", f"ZeRO optimizer shard(s) of DP rank(s) {lost} missing: "
                              f"{len(zero)} of {want} present")
    if len(zero) > want:
        found.problem("stray_shard", f"{len(zero)} ZeRO shards for dp_world_size {want}")
    first = next(n for n in names if _ZERO.match(n))
    osd = found.read(folder / first).root
    inner = osd.get("optimizer_state_dict") if isinstance(osd, dict) else None
    if isinstance(inner, dict):
        if "loss_scaler" in inner or "dynamic_loss_scale" in inner:
            found.add("scaler", f"{first}:optimizer_state_dict.loss_scaler")
        parts = inner.get("partition_count")
        count = parts[0] if isinstance(parts, (list, tuple)) and parts else parts
        if _sane(count, 1 << 20) and count != want:
            found.problem("world_size_mismatch", f"ZeRO shards were written with partition_count {count}, "
                                  f"model states say dp_world_size {want}")


def read_hf(folder: Path, fmt: str) -> Found:
    """Trainer and accelerate folders: one file per state; rng files are per process."""
    found = Found(fmt)
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    for name in names:
        _hf_file(folder, name, found)
    rng_ranks = [m for n in names if (m := _RNG.match(n) or _ACC_RNG.match(n))]
    if rng_ranks:
        found.world_size = len(rng_ranks) if any(m.group(1) for m in rng_ranks) else 1
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        _check_index(folder, index, found)
    return found


def _hf_file(folder: Path, name: str, found: Found) -> None:
    path = folder / name
    if _HF_MODEL.match(name):
        found.add("model", name)
        content = found.read(path)
        found.tensors.update(tensor_items(content.root if isinstance(content.root, dict) else {}))
    elif name in ("optimizer.pt", "optimizer.bin") or pattern("accelerate_optimizer_file").match(name):
        content = found.read(path)
        shown = classify({"optimizer": content.root})
        found.add("optimizer", *(f"{name}:{k.split('.', 1)[-1]}" for k in shown.get("optimizer", [name])))
    elif pattern("scheduler_file").match(name):
        found.read(path)
        found.add("scheduler", name)
    elif pattern("scaler_file").match(name):
        found.read(path)
        found.add("scaler", name)
    elif _RNG.match(name) or _ACC_RNG.match(name):
        found.read(path)
        found.add("rng", name)
    elif pattern("sampler_file").match(name):
        found.read(path)
        found.add("sampler", name)
    elif name == "trainer_state.json":
        _trainer_state(path, found)
    elif name.endswith((".bin", ".pt", ".pth", ".pkl")):
        found.read(path)


def _trainer_state(path: Path, found: Found) -> None:
    try:
        state = json.loads(read_regular_text(path))
    except (OSError, ValueError) as exc:
        found.problem("unreadable", f"trainer_state.json: {exc}")
        return
    if isinstance(state, dict) and isinstance(state.get("global_step"), int):
        found.add("step", f"trainer_state.json:global_step={state['global_step']}")
        # The Trainer resumes the data order by skipping global_step batches of a seeded sampler.
        found.add("sampler", "trainer_state.json:global_step (Trainer skips consumed batches)")


def _check_index(folder: Path, index: Path, found: Found) -> None:
    try:
        weight_map = json.loads(read_regular_text(index)).get("weight_map", {})
    except (OSError, ValueError, AttributeError) as exc:
        found.problem("unreadable", f"{index.name}: {exc}")
        return
    for shard in sorted(set(weight_map.values()) if isinstance(weight_map, dict) else ()):
        if not (folder / str(shard)).is_file():
            found.problem("missing_shard", f"model shard {shard} named by {index.name} is missing")
