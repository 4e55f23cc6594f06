"""Read one checkpoint file's structure without loading it: torch.save (zip or legacy), pickle, safetensors.

Only the pickle (`data.pkl`) and the zip directory of a torch.save file are
read, never the tensor records, so a 10 GB file costs milliseconds.
"""

from __future__ import annotations

import errno
import json
import os
import pickletools
import stat
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from diagnose.probes.checkpoint.getattr_chain import GETATTR, getattr_is_harmless
from diagnose.probes.checkpoint.pickle_inspect import (
    DEFAULT_LIMITS,
    Limits,
    PickleInspectError,
    StorageRef,
    inspect_pickle,
    inspect_stream,
)
from diagnose.probes.checkpoint.pickle_tree import TensorMeta, storage_dtype

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024
_ITEMSIZE = {"float64": 8, "int64": 8, "complex128": 16, "complex64": 8, "float32": 4, "int32": 4,
             "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
_ST_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
              "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
              "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


@dataclass
class FileContent:
    """The structure of one checkpoint file, or why it could not be read."""

    path: Path
    kind: str = "unknown"
    root: Any = None
    suspicious: tuple[str, ...] = ()
    dangerous: tuple[str, ...] = ()
    globals: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)
    error: str | None = None


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading; a FIFO, socket or device is refused without blocking on it.

    The path is opened non-blocking and checked on the descriptor (not the name), so a file
    swapped for a FIFO between a listing and the read is refused too."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (FIFO, socket or device): not read", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_text(path: Path, limit: int = 16 << 20) -> str:
    """The start of a small regular text file (JSON index, `latest` tag), never a special file."""
    with open_regular(path) as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


def read_file(path: Path, limits: Limits = DEFAULT_LIMITS) -> FileContent:
    """Sniff the format from the first bytes and read the structure; never raises on bad content."""
    out = FileContent(path)
    try:
        with open_regular(path) as fh:
            head = fh.read(16)
        if head.startswith(b"PK\x03\x04"):
            _read_zip(path, out, limits)
        elif _looks_like_safetensors(head):
            _read_safetensors(path, out)
        elif head[:1] in _PICKLE_FIRST_OPCODES:
            _read_pickle_file(path, out, limits, strong=head[:1] in _CLEAR_PICKLE_START)
        else:
            out.error = "not a torch.save, pickle or safetensors file"
    except PickleInspectError as exc:
        out.error = str(exc)
        # torch.load has already imported and called what the stream named before the failure.
        out.suspicious = tuple(dict.fromkeys((*out.suspicious, *exc.suspicious)))
        out.dangerous = tuple(dict.fromkeys((*out.dangerous, *exc.dangerous)))
    except (OSError, zipfile.BadZipFile, ValueError, struct.error) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    return out


# Every opcode a pickle stream can start with (protocol 0 and 1 have no PROTO header).
_PICKLE_FIRST_OPCODES = frozenset(bytes([op.code.encode("latin-1")[0]]) for op in pickletools.opcodes)
_CLEAR_PICKLE_START = frozenset({b"\x80", b"(", b"]", b"}"})


def _set_skeleton(out: FileContent, skel: Any, audit: Callable[[], bool] | None = None) -> None:
    """Take the skeleton; `audit` re-reads the stream to clear a getattr used only for nested classes."""
    out.root = skel.root
    suspicious, dangerous = skel.suspicious, skel.dangerous
    if GETATTR in suspicious and audit is not None and audit():
        suspicious = tuple(g for g in suspicious if g != GETATTR)
        dangerous = tuple(g for g in dangerous if g != GETATTR)
    out.globals = tuple(dict.fromkeys((*out.globals, *skel.globals)))
    out.suspicious = tuple(dict.fromkeys((*out.suspicious, *suspicious)))
    out.dangerous = tuple(dict.fromkeys((*out.dangerous, *dangerous)))


def _read_zip(path: Path, out: FileContent, limits: Limits) -> None:
    """torch.save zip: `<archive>/data.pkl` plus one record per storage under `<archive>/data/`."""
    try:
        zf = zipfile.ZipFile(open_regular(path))
    except zipfile.BadZipFile:
        out.kind = "torch.save"
        out.error = "truncated or corrupt zip (the save was probably interrupted)"
        return
    with zf:
        members = zf.infolist()
        infos = {i.filename: i for i in members}
        pkls = [i for i in members if i.filename.endswith(".pkl") and i.filename.count("/") == 1]
        if not pkls:
            out.kind = "zip"
            out.error = "zip without a torch data.pkl"
            return
        out.kind = "torch.save"
        names = [i.filename for i in members]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            out.problems.append(f"ambiguous archive: member(s) stored more than once ({', '.join(twice[:5])}); "
                                "every copy was inspected, and readers disagree on which one they load")
        # torch reads <archive>/data.pkl (and may read other .pkl records): inspect every copy of each.
        main = next((i for i in pkls if i.filename.endswith("/data.pkl")), pkls[0])
        for info in sorted(pkls, key=lambda i: i is not main):
            if info.file_size > limits.max_bytes:
                raise PickleInspectError(f"{info.filename} of {info.file_size} bytes exceeds the limit")
            with zf.open(info) as fh:
                data = fh.read(limits.max_bytes + 1)
            skel = inspect_pickle(data, limits)
            if info is main:
                _set_skeleton(out, skel, lambda data=data: getattr_is_harmless(data, limits))
                prefix = main.filename[: -len(main.filename.rpartition("/")[2])]
                for ref in skel.storages:
                    _check_record(ref, infos, prefix, out)
            else:
                root = out.root
                _set_skeleton(out, skel, lambda data=data: getattr_is_harmless(data, limits))
                out.root = root


def _check_record(ref: StorageRef, infos: dict[str, zipfile.ZipInfo], prefix: str, out: FileContent) -> None:
    """A storage the pickle names must have its data record, large enough for its elements."""
    parts = ref.parts
    if len(parts) < 5 or parts[0] != "storage":
        return
    name = f"{prefix}data/{parts[2]}"
    info = infos.get(name)
    if info is None:
        out.problems.append(f"tensor data record {name} is missing")
        return
    itemsize = _ITEMSIZE.get(storage_dtype(ref) or "", 0)
    numel = parts[4]
    if itemsize and isinstance(numel, int) and 0 <= numel < 1 << 56 and info.file_size < numel * itemsize:
        out.problems.append(f"tensor data record {name} holds {info.file_size} bytes, "
                            f"{parts[4] * itemsize} expected (truncated)")


def _read_pickle_file(path: Path, out: FileContent, limits: Limits, strong: bool = True) -> None:
    """A raw pickle (any protocol), or torch's legacy format: magic, protocol, sys info, then the object.

    A protocol 0/1 stream can start with almost any opcode (``cos\nsystem\n`` is GLOBAL):
    torch.load unpickles it all the same, so any file whose first byte is an opcode is read
    as a pickle; one that fails to read without naming anything is "not a checkpoint"."""
    with open_regular(path) as fh:

        def audit_from(start: int) -> Callable[[], bool]:
            return lambda: fh.seek(start) == start and getattr_is_harmless(fh, limits)

        try:
            first = inspect_stream(fh, limits)
        except PickleInspectError as exc:
            if not strong and not exc.suspicious:
                out.error = "not a torch.save, pickle or safetensors file"
                return
            raise
        if first.root != LEGACY_MAGIC:
            out.kind = "pickle"
            _set_skeleton(out, first, audit_from(0))
            return
        out.kind = "torch.save-legacy"
        inspect_stream(fh, limits)
        inspect_stream(fh, limits)
        start = fh.tell()
        _set_skeleton(out, inspect_stream(fh, limits), audit_from(start))


def _looks_like_safetensors(head: bytes) -> bool:
    if len(head) < 9:
        return False
    (size,) = struct.unpack("<Q", head[:8])
    return 0 < size <= MAX_SAFETENSORS_HEADER and head[8:9] == b"{"


def _read_safetensors(path: Path, out: FileContent) -> None:
    """safetensors: an 8-byte little-endian length, then a JSON header; tensors are not read."""
    out.kind = "safetensors"
    with open_regular(path) as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    if not isinstance(header, dict):
        raise ValueError("safetensors header is not a JSON object")
    root: dict[str, Any] = {}
    end = 0
    for name, meta in header.items():
        if name == "__metadata__" or not isinstance(meta, dict):
            continue
        shape = tuple(meta.get("shape") or ())
        root[name] = TensorMeta(shape, _ST_DTYPES.get(str(meta.get("dtype")), str(meta.get("dtype"))))
        offsets = meta.get("data_offsets") or (0, 0)
        end = max(end, int(offsets[1]) if len(offsets) == 2 else 0)
    out.root = root
    actual = path.stat().st_size
    if actual < 8 + size + end:
        out.problems.append(f"file holds {actual} bytes, its header needs {8 + size + end} (truncated)")
