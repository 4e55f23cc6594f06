"""Turn the inert nodes of `pickle_inspect` into a plain skeleton: dicts, lists, tensor metadata.

Tensors become `TensorMeta` (shape, dtype, storage key) from the arguments of
torch's rebuild functions, numpy arrays become `ArrayMeta`, `OrderedDict`s
become dicts, and any other object becomes an `Obj` naming its class and
holding its recorded arguments and state. Shared references stay shared,
cycles become `CYCLE`, and nesting deeper than `MAX_DEPTH` becomes `TRUNCATED`.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from diagnose.probes.checkpoint.pickle_nodes import GlobalRef, Node, StorageRef

MAX_DEPTH = 120
CYCLE = "<cycle>"
TRUNCATED = "<nested too deep>"

_STORAGE_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "Untyped": "uint8", "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32",
    "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2",
}
_DICTS = {"collections.OrderedDict", "builtins.dict", "collections.defaultdict", "collections.Counter"}
_SEQS = {"builtins.set", "builtins.frozenset", "builtins.list", "builtins.tuple", "collections.deque"}
_NP_RECONSTRUCT = {"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"}
_KEY_REPR = reprlib.Repr()
_KEY_REPR.maxlevel, _KEY_REPR.maxtuple, _KEY_REPR.maxstring, _KEY_REPR.maxother = 3, 6, 200, 200


@dataclass(frozen=True)
class TensorMeta:
    """A tensor as the pickle describes it: no data is read."""

    shape: tuple[int, ...] | None
    dtype: str | None
    storage: str | None = None
    parameter: bool = False

    def describe(self) -> str:
        shape = "?" if self.shape is None else "x".join(str(d) for d in self.shape) or "scalar"
        return f"tensor[{shape}] {self.dtype or '?'}"


@dataclass(frozen=True)
class ArrayMeta:
    """A numpy array (shape and dtype only)."""

    shape: tuple[int, ...] | None
    dtype: str | None


@dataclass(eq=False, repr=False)
class Obj:
    """Any other object: its class name and what the pickle recorded for it."""

    cls: str
    args: tuple[Any, ...] = ()
    state: Any = None
    items: list[Any] = field(default_factory=list)
    entries: dict[Any, Any] = field(default_factory=dict)

    def __repr__(self) -> str:  # bounded: hostile objects can share subtrees exponentially
        return f"<{self.cls[:200]}>"

    def fields(self) -> dict[Any, Any]:
        """Attribute dict from BUILD state, a dict or (dict, slots) pair."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2:
            merged = dict(state[0]) if isinstance(state[0], dict) else {}
            merged.update(state[1] if isinstance(state[1], dict) else {})
            return merged
        return dict(state) if isinstance(state, dict) else {}


def storage_dtype(ref: Any) -> str | None:
    """dtype of a torch storage persistent id ('storage', torch.FloatStorage, key, loc, numel)."""
    parts = ref.parts if isinstance(ref, StorageRef) else ()
    if len(parts) > 1 and isinstance(parts[1], GlobalRef):
        name = parts[1].name.removesuffix("Storage")
        return _STORAGE_DTYPES.get(name, name.lower() or None)
    return None


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, Node) and value.qualname == "torch.Size" and value.args:
        value = value.args[0]
    if isinstance(value, (tuple, list)) and all(isinstance(d, int) for d in value):
        return tuple(value)
    return None


def _tensor(node: Node) -> TensorMeta:
    """Tensor metadata from the args of _rebuild_tensor(_v2/_v3) and friends."""
    name, args = node.qualname.rsplit(".", 1)[-1], node.args
    if name in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3") and args:
        storage = args[0]
        dtype = storage_dtype(storage)
        if name == "_rebuild_tensor_v3" and len(args) > 6 and isinstance(args[6], GlobalRef):
            dtype = args[6].name
        key = storage.parts[2] if isinstance(storage, StorageRef) and len(storage.parts) > 2 else None
        return TensorMeta(_shape(args[2]) if len(args) > 2 else None, dtype, str(key) if key is not None else None)
    if name == "_rebuild_wrapper_subclass" and len(args) > 2:  # (cls, dtype, size, ...): DTensor and friends
        dtype = args[1].name if isinstance(args[1], GlobalRef) else None
        return TensorMeta(_shape(args[2]), dtype)
    if name in ("_rebuild_device_tensor_from_numpy", "_rebuild_meta_tensor_no_storage") and len(args) > 1:
        dtype = args[0].name if isinstance(args[0], GlobalRef) else None
        return TensorMeta(_shape(args[1]), dtype)
    return TensorMeta(None, None)


class _Converter:
    """One conversion pass, memoised by object identity (shared subtrees stay shared)."""

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.active: set[int] = set()

    def convert(self, value: Any, depth: int = 0) -> Any:
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return value
        if depth > MAX_DEPTH:
            return TRUNCATED
        key = id(value)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            return CYCLE
        self.active.add(key)
        try:
            out = self._convert(value, depth + 1)
        finally:
            self.active.discard(key)
        self.memo[key] = out
        return out

    def _key(self, key: Any, depth: int) -> Any:
        """Dict keys stay scalars or become short strings (so printing a key is always cheap)."""
        out = self.convert(key, depth)
        if isinstance(out, int) and not -(2**63) <= out < 2**63:
            return "<big int key>"
        if out is None or isinstance(out, (str, int, float, bool)):
            return out
        if isinstance(out, Obj):
            return out
        return _KEY_REPR.repr(out)

    def _dict(self, pairs: Any, depth: int) -> dict[Any, Any]:
        return {self._key(k, depth): self.convert(v, depth) for k, v in pairs}

    def _convert(self, value: Any, depth: int) -> Any:
        if isinstance(value, dict):
            return self._dict(value.items(), depth)
        if isinstance(value, (list, tuple, set, frozenset)):
            seq = [self.convert(v, depth) for v in value]
            return tuple(seq) if isinstance(value, tuple) else seq
        if isinstance(value, GlobalRef):
            return Obj(value.qualname)
        if isinstance(value, StorageRef):
            return Obj("<storage>", args=tuple(self.convert(p, depth) for p in value.parts))
        if isinstance(value, Node):
            return self._node(value, depth)
        return Obj(type(value).__name__)

    def _node(self, node: Node, depth: int) -> Any:
        name = node.qualname
        if name in _DICTS:
            pairs = list(node.entries)
            if node.args and isinstance(node.args[-1], (list, tuple)):
                pairs = [p for p in node.args[-1] if isinstance(p, (list, tuple)) and len(p) == 2] + pairs
            return self._dict(pairs, depth)
        if name in _SEQS:
            first = node.args[0] if node.args and isinstance(node.args[0], (list, tuple)) else []
            return [self.convert(v, depth) for v in [*first, *node.items]]
        if name == "torch.Size":
            return _shape(node)
        if ".torch._utils._rebuild_" in f".{name}":
            if name.endswith(("_rebuild_parameter", "_rebuild_parameter_with_state")) and node.args:
                inner = self.convert(node.args[0], depth)
                return TensorMeta(inner.shape, inner.dtype, inner.storage, True) \
                    if isinstance(inner, TensorMeta) else inner
            return _tensor(node)
        if name == "torch._tensor._rebuild_from_type_v2" and len(node.args) > 2:
            return self._node(Node(node.args[0], tuple(node.args[2] or ())), depth)
        if name in _NP_RECONSTRUCT:
            st = node.state if isinstance(node.state, tuple) else ()
            dtype = st[2] if len(st) > 2 else None
            dtype_name = dtype.args[0] if isinstance(dtype, Node) and dtype.args else None
            return ArrayMeta(_shape(st[1]) if len(st) > 1 else None, str(dtype_name) if dtype_name else None)
        return Obj(name, tuple(self.convert(a, depth) for a in node.args), self.convert(node.state, depth),
                   [self.convert(v, depth) for v in node.items], self._dict(node.entries, depth))


def to_skeleton(value: Any) -> Any:
    """Plain skeleton of an inertly unpickled value."""
    return _Converter().convert(value)


def flatten(root: Any, *, max_leaves: int = 2_000_000, max_depth: int = 32) -> Iterator[tuple[str, Any]]:
    """Yield (dotted.key, leaf) for nested dicts and lists; leaves are tensors, scalars, objects.

    An `Obj` is a leaf. Stops after `max_leaves` leaves (shared subtrees count each time).
    """
    stack: list[tuple[str, Any, int]] = [("", root, 0)]
    count = 0
    while stack and count < max_leaves:
        path, value, depth = stack.pop()
        if isinstance(value, (dict, list, tuple)) and value and depth < max_depth:
            items = value.items() if isinstance(value, dict) else enumerate(value)
            children = [(f"{path}.{k}" if path else str(k), v, depth + 1) for k, v in items]
            stack.extend(reversed(children))
            continue
        count += 1
        yield path, value
