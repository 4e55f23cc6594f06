"""Map the keys of a checkpoint's object tree to the training states of CONTRACT.md.

A key names a state by its name (`optimizer`, `lr_scheduler`, `global_step`,
`rng_state`, ...) or, failing that, by the shape of its value (a dict with
`state` and `param_groups` is an optimizer; a dict of tensors is a model).
A key whose value is None or empty shows nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from diagnose.probes.checkpoint.patterns import pattern, state_key_patterns
from diagnose.probes.checkpoint.pickle_tree import ArrayMeta, Obj, TensorMeta

STATES = ("model", "optimizer", "scheduler", "scaler", "rng", "sampler", "step", "sharding")
EXAMPLES = 5



def state_of_name(name: str) -> str | None:
    """The state a key name stands for, if any."""
    low = str(name).lower()
    return next((state for state, pat in state_key_patterns() if pat.search(low)), None)


def is_empty(value: Any) -> bool:
    """None, an empty container, or an object that recorded nothing."""
    if value is None:
        return True
    if isinstance(value, (dict, list, tuple, str)):
        return len(value) == 0
    return False


def tensor_items(value: Any, prefix: str = "", limit: int = 1_000_000) -> Iterator[tuple[str, TensorMeta]]:
    """(dotted key, tensor) pairs in a nested dict, e.g. a state_dict."""
    stack = [(prefix, value)]
    seen = 0
    while stack and seen < limit:
        path, val = stack.pop()
        if isinstance(val, TensorMeta):
            seen += 1
            yield path, val
        elif isinstance(val, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in reversed(list(val.items())))


def looks_like_state_dict(value: Any) -> bool:
    """A dict whose values are mostly tensors (a model's state_dict)."""
    if not isinstance(value, dict) or not value:
        return False
    tensors = sum(isinstance(v, TensorMeta) for v in value.values())
    return tensors > 0 and tensors >= len(value) / 2


def state_of_value(value: Any) -> str | None:
    """The state a value's shape shows, for keys whose name says nothing."""
    if isinstance(value, dict):
        keys = {str(k) for k in value}
        if {"state", "param_groups"} <= keys:
            return "optimizer"
        if {"base_lrs", "last_epoch"} & keys:
            return "scheduler"
        if {"scale", "growth_factor"} <= keys or "_growth_tracker" in keys:
            return "scaler"
        if looks_like_state_dict(value):
            return "model"
    if isinstance(value, tuple) and value and value[0] == "MT19937":
        return "rng"
    if isinstance(value, (ArrayMeta, TensorMeta)) and value.dtype in ("uint8", "u1", "|u1"):
        return "rng"
    return None


def _examples(key: str, value: Any) -> list[str]:
    """A few dotted keys under `key` that show its state."""
    if isinstance(value, dict) and value:
        out = []
        for k, v in value.items():
            sub = f"{key}.{k}"
            if isinstance(v, dict) and v and len(out) < 2:
                out.append(f"{sub}.{next(iter(v))}")
            else:
                out.append(sub)
            if len(out) >= EXAMPLES:
                break
        return out
    return [key]


def classify(root: Any, *, prefix: str = "", depth: int = 0) -> dict[str, list[str]]:
    """State name -> example keys that show it, for a checkpoint's root object."""
    found: dict[str, list[str]] = {}
    if isinstance(root, Obj):
        root = root.fields() or root.entries
    if not isinstance(root, dict):
        return found
    if depth == 0 and looks_like_state_dict(root):
        return {"model": [f"{prefix}{k}" for k in list(root)[:EXAMPLES]]}
    for key, value in root.items():
        name = f"{prefix}{key}"
        if is_empty(value):
            continue
        state = state_of_name(str(key)) or state_of_value(value)
        if state == "rng" and looks_like_state_dict(value) and len(value) > 8:
            state = "model"
        if state is None and isinstance(value, dict) and depth < 2:
            for sub, keys in classify(value, prefix=f"{name}.", depth=depth + 1).items():
                found.setdefault(sub, []).extend(keys)
            continue
        if state is not None:
            found.setdefault(state, []).extend(_examples(name, value))
    return {s: keys[:EXAMPLES] for s, keys in found.items()}


def sharded_globals(globals_: tuple[str, ...]) -> list[str]:
    """Globals that show a sharded state dict (ShardedTensor, DTensor, FSDP flat params)."""
    return [g for g in globals_ if pattern("sharded_global").search(g)]


def missing_states(present: set[str], *, sharded: bool) -> list[str]:
    """States a full resume needs that the checkpoint lacks (sharding only matters when sharded)."""
    wanted = [s for s in STATES if s != "sharding" or sharded]
    return [s for s in wanted if s not in present]
