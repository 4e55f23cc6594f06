"""Read a pickle stream without executing it: the object skeleton and the globals it names.

A subclass of the pure-Python unpickler where every global becomes an inert
`GlobalRef`, every call (REDUCE, NEWOBJ, INST, OBJ, BUILD) becomes a `Node` that
only records its arguments, and persistent ids (torch storages) become
`StorageRef`. Nothing named in the stream is imported or called. Input bytes,
opcodes and wall time are bounded; any failure is a `PickleInspectError`.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import struct
import time
from dataclasses import dataclass
from typing import Any, BinaryIO

from diagnose.errors import DiagnoseError
from diagnose.probes.checkpoint.pickle_globals import is_dangerous, is_harmless
from diagnose.probes.checkpoint.pickle_nodes import GlobalRef, Node, StorageRef
from diagnose.probes.checkpoint.pickle_tree import to_skeleton


class PickleInspectError(DiagnoseError):
    """The stream is not a pickle we can read safely (corrupt, truncated, or over a limit).

    `suspicious` and `dangerous` hold what the stream named before the failure: torch.load would
    already have imported and called those."""

    suspicious: tuple[str, ...] = ()
    dangerous: tuple[str, ...] = ()


@dataclass(frozen=True)
class Limits:
    """Bounds on one inspection; the defaults fit any real checkpoint's pickle."""

    max_bytes: int = 256 * 1024 * 1024
    max_ops: int = 8_000_000
    max_seconds: float = 60.0
    max_globals: int = 10_000


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class PickleSkeleton:
    """What one pickle holds, as read without executing it."""

    root: Any
    globals: tuple[str, ...]
    suspicious: tuple[str, ...]
    dangerous: tuple[str, ...]
    storages: tuple[StorageRef, ...]
    ops: int
    nbytes: int


class _BoundedReader:
    """File wrapper that refuses to read past a byte budget (hostile length fields)."""

    def __init__(self, raw: BinaryIO, budget: int) -> None:
        self._raw = raw
        self.budget = budget
        self.consumed = 0

    def _take(self, n: int) -> None:
        if n < 0 or self.consumed + n > self.budget:
            raise PickleInspectError(f"pickle stream exceeds the {self.budget} byte limit")

    def read(self, n: int = -1) -> bytes:
        self._take(self.budget + 1 if n is None or n < 0 else n)
        data = self._raw.read(n)
        self.consumed += len(data)
        return data

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def readline(self) -> bytes:
        data = self._raw.readline(self.budget - self.consumed + 1)
        self.consumed += len(data)
        self._take(0)
        return data


class _InertUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """An unpickler that records instead of importing or calling."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, reader: Any, limits: Limits) -> None:
        super().__init__(reader, encoding="latin1")
        self.limits = limits
        self.globals: dict[str, GlobalRef] = {}
        self.storages: list[StorageRef] = []
        self.patched: list[str] = []
        self.ops = 0

    def find_class(self, module: str, name: str) -> GlobalRef:  # noqa: D102
        if not isinstance(module, str) or not isinstance(name, str):
            raise PickleInspectError("global with a non-string name")
        if self.proto < 3 and (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif self.proto < 3:
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        key = f"{module}.{name}"
        ref = self.globals.get(key)
        if ref is None:
            if len(self.globals) >= self.limits.max_globals:
                raise PickleInspectError(f"more than {self.limits.max_globals} distinct globals")
            ref = self.globals[key] = GlobalRef(module, name)
        return ref

    def persistent_load(self, pid: Any) -> StorageRef:  # noqa: D102
        ref = StorageRef(pid)
        self.storages.append(ref)
        return ref

    def _call(self, func: Any, args: Any) -> None:
        self.append(Node(func, tuple(args) if isinstance(args, (tuple, list)) else (args,)))

    def load_reduce(self) -> None:
        args = self.stack.pop()
        self._call(self.stack.pop(), args)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        self._call(self.stack.pop(), args)

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        self._call(self.stack.pop(), (*args, kwargs) if kwargs else args)

    def load_inst(self) -> None:
        module = self.readline()[:-1].decode("ascii")
        name = self.readline()[:-1].decode("ascii")
        self._call(self.find_class(module, name), self.pop_mark())

    def load_obj(self) -> None:
        args = self.pop_mark()
        self._call(args.pop(0), args)

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, GlobalRef):
            # BUILD on a global sets attributes of a module or class on load: a monkeypatch.
            self.patched.append(inst.qualname)
            return
        if not isinstance(inst, Node):
            raise PickleInspectError(f"BUILD on a {type(inst).__name__}")
        inst.state = state

    def load_bytearray8(self) -> None:
        """BYTEARRAY8 without allocating the declared length first (a memory bomb in hostile input)."""
        (size,) = struct.unpack("<Q", self.read(8))
        if size > self.limits.max_bytes:
            raise PickleInspectError(f"bytearray of {size} bytes declared, over the {self.limits.max_bytes} byte limit")
        data = self.read(size)
        if len(data) != size:
            raise PickleInspectError("pickle stream ends inside a bytearray (truncated)")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8
    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.INST[0]] = load_inst
    dispatch[pickle.OBJ[0]] = load_obj
    dispatch[pickle.BUILD[0]] = load_build

    def run(self) -> Any:
        """`pickle._Unpickler.load` with an opcode budget and a deadline."""
        self._unframer = pickle._Unframer(self._file_read, self._file_readline)  # type: ignore[attr-defined]
        self.read = self._unframer.read
        self.readinto = self._unframer.readinto
        self.readline = self._unframer.readline
        self.metastack, self.stack = [], []
        self.append = self.stack.append
        self.proto = 0
        read, dispatch, limits = self.read, self.dispatch, self.limits
        deadline = time.monotonic() + limits.max_seconds
        try:
            while True:
                key = read(1)
                if not key:
                    raise PickleInspectError("pickle stream ends before STOP (truncated)")
                self.ops += 1
                if not self.ops & 0xFFFF:
                    if self.ops > limits.max_ops:
                        raise PickleInspectError(f"pickle stream exceeds {limits.max_ops} opcodes")
                    if time.monotonic() > deadline:
                        raise PickleInspectError(f"pickle inspection exceeds {limits.max_seconds} s")
                dispatch[key[0]](self)
        except pickle._Stop as stop:  # type: ignore[attr-defined]
            return stop.value


def inspect_stream(raw: BinaryIO, limits: Limits = DEFAULT_LIMITS) -> PickleSkeleton:
    """Read one pickle from `raw` (at its current position) into a skeleton, executing nothing."""
    return _inspect(_BoundedReader(raw, limits.max_bytes), limits)


def _inspect(reader: Any, limits: Limits) -> PickleSkeleton:
    start = reader.tell() if isinstance(reader, io.BytesIO) else 0
    unpickler = _InertUnpickler(reader, limits)
    try:
        value = unpickler.run()
        root = to_skeleton(value)
    except (Exception, RecursionError) as exc:  # hostile input may raise anything; name it
        if isinstance(exc, PickleInspectError):
            err = exc
        elif isinstance(exc, KeyError):
            err = PickleInspectError(f"unknown or invalid opcode/memo key {exc}")
        else:
            err = PickleInspectError(f"not a readable pickle: {type(exc).__name__}: {exc}"[:300])
        # torch.load has run every opcode before the one that failed: what was named so far counts.
        err.suspicious, err.dangerous = _verdicts(unpickler)
        raise err from None
    names = tuple(unpickler.globals)
    suspicious, dangerous = _verdicts(unpickler)
    return PickleSkeleton(
        root=root,
        globals=names,
        suspicious=suspicious,
        dangerous=dangerous,
        storages=tuple(unpickler.storages),
        ops=unpickler.ops,
        nbytes=reader.tell() - start if isinstance(reader, io.BytesIO) else reader.consumed,
    )


def _verdicts(unpickler: _InertUnpickler) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Suspicious and dangerous names: globals outside the allow-list, and BUILDs that patch a global."""
    names = tuple(unpickler.globals)
    patched = tuple(dict.fromkeys(f"{q} (attributes set by BUILD)" for q in unpickler.patched))
    suspicious = tuple(n for n in names if not is_harmless(n)) + patched
    return suspicious, tuple(n for n in names if is_dangerous(n)) + patched


def inspect_pickle(data: bytes, limits: Limits = DEFAULT_LIMITS) -> PickleSkeleton:
    """Inspect a pickle held in memory."""
    if len(data) > limits.max_bytes:
        raise PickleInspectError(f"pickle of {len(data)} bytes exceeds the {limits.max_bytes} byte limit")
    return _inspect(io.BytesIO(data), limits)  # in memory and within max_bytes: no byte wrapper needed
