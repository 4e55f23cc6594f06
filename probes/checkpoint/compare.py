"""Compare the model state of two checkpoints: keys, shapes and dtypes, explaining wrapper prefixes.

DDP and DataParallel add `module.`, torch.compile adds `_orig_mod.`, FSDP and
activation checkpointing add `_fsdp_wrapped_module.` / `_checkpoint_wrapped_module.`
inside keys. Keys are compared after removing those, and the report says which
side carried which wrapper. A dimension that is a whole multiple of the other's is a
sharded tensor beside a full one only when one side is known to be sharded (its format or
files say so); otherwise the two models were built with different sizes.
"""

from __future__ import annotations

from typing import Any

from diagnose.probes.checkpoint.pickle_tree import TensorMeta

WRAPPERS = {
    "module.": "DDP/DataParallel wrapper (`module.`)",
    "_orig_mod.": "torch.compile wrapper (`_orig_mod.`)",
    "_fsdp_wrapped_module.": "FSDP wrapper (`_fsdp_wrapped_module.`)",
    "_checkpoint_wrapped_module.": "activation checkpointing wrapper (`_checkpoint_wrapped_module.`)",
}
EXAMPLES = 10


def _strip(key: str) -> tuple[str, tuple[str, ...]]:
    """The key without wrapper components, and the wrappers found."""
    found = []
    for wrapper in WRAPPERS:
        if key.startswith(wrapper) or f".{wrapper}" in key:
            found.append(wrapper)
            key = key.removeprefix(wrapper).replace(f".{wrapper}", ".")
    return key, tuple(found)


def _normalise(tensors: dict[str, TensorMeta]) -> tuple[dict[str, TensorMeta], set[str]]:
    out: dict[str, TensorMeta] = {}
    wrappers: set[str] = set()
    for key, meta in tensors.items():
        plain, found = _strip(key)
        out[plain] = meta
        wrappers.update(found)
    return out, wrappers


def _common_prefix(a: set[str], b: set[str]) -> str | None:
    """A leading component every key of `a` has that makes it match `b` (e.g. Lightning's `model.`)."""
    firsts = {k.split(".", 1)[0] for k in a}
    if len(firsts) != 1 or not b:
        return None
    prefix = f"{next(iter(firsts))}."
    stripped = {k.removeprefix(prefix) for k in a}
    return prefix if len(stripped & b) >= max(1, len(b) // 2) else None


def _shard_note(sa: tuple[int, ...], sb: tuple[int, ...]) -> str | None:
    if len(sa) != len(sb):
        return None
    diffs = [(x, y) for x, y in zip(sa, sb, strict=True) if x != y]
    if len(diffs) == 1 and min(diffs[0]) > 0 and max(diffs[0]) % min(diffs[0]) == 0:
        return f"1/{max(diffs[0]) // min(diffs[0])} shard beside the full tensor"
    return None


def compare(first: dict[str, TensorMeta], second: dict[str, TensorMeta],
            labels: tuple[str, str] = ("first", "second"),
            sharded: tuple[bool, bool] = (False, False)) -> dict[str, Any]:
    """Key, shape and dtype mismatches between two model states, with their likely explanation.

    `labels` name the two sides in the explanation (e.g. "the checkpoint", "the model");
    `sharded` says which side is known to hold per-rank shards.
    """
    a, wa = _normalise(first)
    b, wb = _normalise(second)
    explain = [f"{labels[0]} has {WRAPPERS[w]}" for w in sorted(wa - wb)]
    explain += [f"{labels[1]} has {WRAPPERS[w]}" for w in sorted(wb - wa)]
    for side, x, y in ((labels[0], a, b), (labels[1], b, a)):
        prefix = None if set(x) & set(y) else _common_prefix(set(x), set(y))
        if prefix:
            explain.append(f"{side} has an extra `{prefix}` prefix on every key")
            stripped = {k.removeprefix(prefix): v for k, v in x.items()}
            x.clear()
            x.update(stripped)
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    sharded_sides = sharded
    shapes, dtypes, sharded = [], [], []
    for key in sorted(set(a) & set(b)):
        ta, tb = a[key], b[key]
        if ta.shape is not None and tb.shape is not None and ta.shape != tb.shape:
            shapes.append({"key": key, "first": list(ta.shape), "second": list(tb.shape)})
            note = _shard_note(ta.shape, tb.shape)
            if note:
                sharded.append(key)
        if ta.dtype and tb.dtype and ta.dtype != tb.dtype:
            dtypes.append({"key": key, "first": ta.dtype, "second": tb.dtype})
    if sharded and any(sharded_sides):
        side = labels[0] if sharded_sides[0] else labels[1]
        explain.append(f"{len(sharded)} tensor(s) differ by a whole factor in one dimension: "
                       f"{side} is sharded (per-rank), the other full")
    elif shapes:
        explain.append(f"{len(shapes)} tensor(s) differ in shape under the same names: the two models were "
                       "built with a different configuration (hidden size, vocabulary, heads or layers)"
                       + ("; if one file was written by a single rank of a tensor-parallel run, it holds "
                          "that rank's shard" if sharded else ""))
    return {
        "keys_first": len(first), "keys_second": len(second),
        "only_in_first": only_a[:EXAMPLES], "only_in_first_count": len(only_a),
        "only_in_second": only_b[:EXAMPLES], "only_in_second_count": len(only_b),
        "shape": shapes[:EXAMPLES], "shape_count": len(shapes),
        "dtype": dtypes[:EXAMPLES], "dtype_count": len(dtypes),
        "explanation": explain,
        "match": not (only_a or only_b or shapes or dtypes),
        "raw_keys_match": set(first) == set(second),
    }
