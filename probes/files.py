"""Safe discovery and reading of the files a failed run left behind.

Never opens special files (FIFOs, sockets, devices) for reading: each file is opened
once with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a path
that turns into a FIFO after the walk is still refused. Files are read with plain
``read`` calls in blocks (never mmapped: a file truncated while it is read simply ends
early, it cannot SIGBUS the process). ``.gz``/``.bz2``/``.xz``/``.zst`` are decompressed as
a stream under one cap. Folders are walked iteratively (no recursion limit), symlink
loops and unreadable folders are skips.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _decompressed_cap() -> int:
    """Bytes of text read from one compressed file: 2 GiB, or ``DIAGNOSE_MAX_DECOMPRESSED_MB``."""
    try:
        return max(1, int(os.environ.get("DIAGNOSE_MAX_DECOMPRESSED_MB", "2048"))) << 20
    except ValueError:
        return 2 << 30


MAX_DECOMPRESSED = _decompressed_cap()  # streamed under this cap: never held whole
BINARY_PROBE = 8192
BLOCK = 1 << 20              # bytes per read: a block stays in cache while the scan reads it (8 MiB: 0.6x the speed)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zstd")
_TEXT_BYTES = bytes([9, 10, 13, 27, *range(32, 256)])  # tab, LF, CR, ESC and everything from space up


@dataclass(frozen=True)
class Skip:
    """A path that was not read, and why."""

    source: str
    reason: str


def walk(paths: Iterable[Path]) -> tuple[list[Path], list[Skip]]:
    """Regular files under ``paths`` (iteratively, any depth), in a stable order, plus what was skipped."""
    files: set[Path] = set()
    skipped: list[Skip] = []
    seen_dirs: set[tuple[int, int]] = set()
    stack = [Path(p) for p in reversed(list(paths))]
    while stack:
        path = stack.pop()
        try:
            st = path.stat()
        except OSError as exc:
            skipped.append(Skip(str(path), f"cannot stat: {exc.strerror or exc}"))
            continue
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:
                skipped.append(Skip(str(path), "directory already visited (symlink loop)"))
                continue
            seen_dirs.add(key)
            try:
                children = sorted(path.iterdir())
            except OSError as exc:
                skipped.append(Skip(str(path), f"cannot list directory: {exc.strerror or exc}"))
                continue
            stack.extend(reversed(children))
        elif stat.S_ISREG(st.st_mode):
            files.add(path)
        else:
            skipped.append(Skip(str(path), "special file (FIFO, socket or device): not opened"))
    return sorted(files), skipped


class _FdReader(io.RawIOBase):
    """A raw reader over an open descriptor (so decompressors can stream from the one open)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        return os.readv(self._fd, [buf])


class Source:
    """One open input file: its first bytes, then the rest in blocks; close() releases it.

    ``head`` holds the first block (already read); ``blocks()`` yields the whole content
    from the start, ``head`` included, each byte once. ``note`` says when the content was cut."""

    def __init__(self, path: Path, fd: int, size: int, compressed: bool) -> None:
        self.path = path
        self.size = size
        self.compressed = compressed
        self.note: str | None = None
        self._fd = fd
        self._stream: Any = None
        self._total = 0
        self._done = False
        if compressed:
            self._stream = _decompressor(path.name.lower(), _FdReader(fd))
        self.head = self._read()

    def _read(self) -> bytes:
        if self._done:
            return b""
        if self._stream is None:
            try:
                block = os.read(self._fd, BLOCK)
            except BlockingIOError:  # not a regular file after all: stop, never wait
                block = b""
            except OSError as exc:
                if not self._total:
                    raise
                self.note = f"read failed after {self._total} bytes: {exc.strerror or exc}"
                block = b""
        else:
            block = self._inflate()
        if not block:
            self._done = True
        self._total += len(block)
        return block

    def _inflate(self) -> bytes:
        """Up to BLOCK decompressed bytes, in small reads: a corrupt tail keeps what came before."""
        parts: list[bytes] = []
        got = 0
        while got < BLOCK:
            room = MAX_DECOMPRESSED - self._total - got
            if room <= 0:
                self.note = f"decompressed text cut at {MAX_DECOMPRESSED >> 20} MiB"
                self._done = True
                break
            try:
                piece = self._stream.read(min(1 << 16, room))
            except Exception as exc:  # noqa: BLE001 - any decoder error means a corrupt archive
                if not self._total and not got:
                    raise OSError(f"corrupt compressed file: {exc}") from exc
                self.note = f"compressed file truncated or corrupt after {self._total + got} bytes: {exc}"
                self._done = True
                break
            if not piece:
                self._done = True
                break
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    @property
    def total(self) -> int:
        """Bytes of content read so far (decompressed)."""
        return self._total

    def blocks(self) -> Iterator[bytes]:
        """The content from the start, in blocks of at most ``BLOCK`` bytes (``head`` first)."""
        if self.head:
            yield self.head
        while block := self._read():
            yield block

    def read_all(self, limit: int) -> bytes | None:
        """The whole content when it is at most ``limit`` bytes, else None (nothing more is read)."""
        if not self.compressed and self.size > limit:
            return None
        parts, total = [self.head], len(self.head)
        while block := self._read():
            total += len(block)
            if total > limit:
                return None
            parts.append(block)
        return b"".join(parts)

    def close(self) -> None:
        if self._stream is not None:
            with contextlib.suppress(Exception):
                self._stream.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _decompressor(name: str, raw: io.RawIOBase) -> Any:
    buffered = io.BufferedReader(raw, 1 << 16)
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=buffered, mode="rb")
    if name.endswith(".bz2"):
        return bz2.BZ2File(buffered, "rb")
    if name.endswith(".xz"):
        return lzma.LZMAFile(buffered, "rb")
    import zstandard  # in-function: an optional dependency, needed only for .zst files

    return zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)


def open_source(path: Path, text_only: bool = True) -> Source | Skip:
    """Open ``path`` once for reading, refusing anything that is not a regular file when opened.

    A Skip with the reason when it cannot or should not be read (special, empty, and with
    ``text_only`` binary: callers that read binary formats check ``looks_binary`` themselves)."""
    name = path.name.lower()
    compressed = name.endswith(_COMPRESSED)
    if compressed and name.endswith((".zst", ".zstd")):
        try:
            import zstandard  # noqa: F401  in-function: optional, only for .zst inputs
        except ImportError:
            return Skip(str(path), "zstd file but the zstandard package is not installed")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except PermissionError:
        return Skip(str(path), "permission denied")
    except OSError as exc:
        return Skip(str(path), f"unreadable: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return Skip(str(path), "special file (FIFO, socket or device): not opened")
        if st.st_size == 0:
            os.close(fd)
            return Skip(str(path), "empty file")
        source = Source(path, fd, st.st_size, compressed)
    except PermissionError:
        os.close(fd)
        return Skip(str(path), "permission denied")
    except Exception as exc:  # noqa: BLE001 - a file we cannot read is a skip, never a crash
        os.close(fd)
        reason = str(exc) if "corrupt compressed" in str(exc) else f"unreadable: {exc}"
        return Skip(str(path), reason)
    if not source.head:
        source.close()
        return Skip(str(path), "empty file")
    if text_only and looks_binary(source.head[:BINARY_PROBE]):
        source.close()
        return Skip(str(path), "binary file (after decompression)" if compressed else "binary file")
    return source


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or mostly non-text bytes, in the first block."""
    if not head:
        return False
    if head.count(b"\0") > len(head) // 100:
        return True
    other = len(head.translate(None, _TEXT_BYTES))  # counted in C: a Python loop costs ~1 us a byte
    return other > 0.3 * len(head)


def total_size(files: Iterable[Path]) -> int:
    """Bytes on disk of ``files`` (0 for any that vanished)."""
    total = 0
    for f in files:
        with contextlib.suppress(OSError):
            total += os.stat(f).st_size
    return total
