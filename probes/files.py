"""Safe discovery and reading of the files a failed run left behind.

Never opens special files (FIFOs, sockets, devices) for reading, survives symlink
loops and unreadable folders, decompresses .gz/.bz2/.xz/.zst with a size bound,
and maps plain files instead of reading them into memory.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import mmap
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_DECOMPRESSED = 2 << 30   # 2 GiB of text from one compressed file
BINARY_PROBE = 8192


@dataclass(frozen=True)
class Skip:
    """A path that was not read, and why."""

    source: str
    reason: str


def walk(paths: Iterable[Path]) -> tuple[list[Path], list[Skip]]:
    """Regular files under ``paths`` (recursively), in a stable order, plus what was skipped."""
    files: list[Path] = []
    skipped: list[Skip] = []
    seen_dirs: set[tuple[int, int]] = set()
    for root in paths:
        for item in _walk_one(Path(root), seen_dirs, skipped):
            files.append(item)
    return sorted(set(files)), skipped


def _walk_one(path: Path, seen: set[tuple[int, int]], skipped: list[Skip]) -> Iterator[Path]:
    try:
        st = path.stat()
    except OSError as exc:
        skipped.append(Skip(str(path), f"cannot stat: {exc.strerror or exc}"))
        return
    if stat.S_ISDIR(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key in seen:
            skipped.append(Skip(str(path), "directory already visited (symlink loop)"))
            return
        seen.add(key)
        try:
            children = sorted(path.iterdir())
        except OSError as exc:
            skipped.append(Skip(str(path), f"cannot list directory: {exc.strerror or exc}"))
            return
        for child in children:
            yield from _walk_one(child, seen, skipped)
    elif stat.S_ISREG(st.st_mode):
        yield path
    else:
        skipped.append(Skip(str(path), "special file (FIFO, socket or device): not opened"))


class OpenedBuffer:
    """A readable buffer over a file (mmap, or decompressed bytes); close() releases it."""

    def __init__(self, data: Any, closer: Any = None, note: str | None = None) -> None:
        self.data = data
        self._closer = closer
        self.note = note

    def close(self) -> None:
        if self._closer is not None:
            self._closer()


def open_buffer(path: Path) -> OpenedBuffer | Skip:
    """Map or decompress ``path``; a Skip with the reason when it cannot or should not be read."""
    name = path.name.lower()
    try:
        if name.endswith((".gz", ".bz2", ".xz", ".zst", ".zstd")):
            return _decompress(path, name)
        size = path.stat().st_size
        if size == 0:
            return Skip(str(path), "empty file")
        with path.open("rb") as fh:
            if _looks_binary(fh.read(BINARY_PROBE)):
                return Skip(str(path), "binary file")
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        with contextlib.suppress(AttributeError, OSError):
            mm.madvise(mmap.MADV_SEQUENTIAL)
        return OpenedBuffer(mm, mm.close)
    except PermissionError:
        return Skip(str(path), "permission denied")
    except (OSError, ValueError, EOFError, lzma.LZMAError) as exc:
        return Skip(str(path), f"unreadable: {exc}")


def _decompress(path: Path, name: str) -> OpenedBuffer | Skip:
    opener: Any
    if name.endswith(".gz"):
        opener = gzip.open
    elif name.endswith(".bz2"):
        opener = bz2.open
    elif name.endswith(".xz"):
        opener = lzma.open
    else:
        try:
            import zstandard
        except ImportError:
            return Skip(str(path), "zstd file but the zstandard package is not installed")
        def opener(p: Path, mode: str) -> Any:  # noqa: ARG001
            return zstandard.ZstdDecompressor().stream_reader(open(p, "rb"), closefd=True)  # noqa: SIM115
    chunks: list[bytes] = []
    total = 0
    note = None
    try:
        with opener(path, "rb") as fh:
            while True:
                block = fh.read(1 << 16)  # small blocks: a truncated archive keeps what came before
                if not block:
                    break
                chunks.append(block)
                total += len(block)
                if total >= MAX_DECOMPRESSED:
                    note = f"decompressed text cut at {MAX_DECOMPRESSED >> 20} MiB"
                    break
    except Exception as exc:  # noqa: BLE001 - any decoder error means a corrupt archive
        if not chunks:
            return Skip(str(path), f"corrupt compressed file: {exc}")
        note = f"compressed file truncated or corrupt after {total} bytes: {exc}"
    data = b"".join(chunks)
    if not data:
        return Skip(str(path), "empty file")
    if _looks_binary(data[:BINARY_PROBE]):
        return Skip(str(path), "binary file (after decompression)")
    return OpenedBuffer(data, None, note)


def _looks_binary(head: bytes) -> bool:
    """NUL bytes, or mostly non-text bytes, in the first block."""
    if not head:
        return False
    if head.count(b"\0") > len(head) // 100:
        return True
    text_like = sum(1 for b in head if b >= 32 or b in (9, 10, 13, 27))
    return text_like < 0.7 * len(head)


def total_size(files: Iterable[Path]) -> int:
    """Bytes on disk of ``files`` (0 for any that vanished)."""
    total = 0
    for f in files:
        with contextlib.suppress(OSError):
            total += os.stat(f).st_size
    return total
