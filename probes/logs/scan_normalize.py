"""Seeing through what terminals add to pasted logs: ANSI colours, CR/LF, progress-bar redraws, soft wraps.

Clean input (no ESC, no CR) is never copied: `needs_normalizing` is two memchr-speed searches, so the
multi-pattern fast path scans the mapped file as it is. Other buffers are rewritten once: colour and
cursor codes dropped, CRLF made LF, and a lone CR (tqdm redrawing its bar) made a line break. The
breaks added are remembered so hits keep the line numbers of the original file.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and two-byte escapes
_ANSI_PATTERN = rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
_ANSI = re.compile(_ANSI_PATTERN)
_ANSI_TEXT = re.compile(_ANSI_PATTERN.decode())
# a whole line pasted as Markdown inline code (`Killed`): read as two spaces and the code, length kept
_INLINE_CODE_LINE = re.compile(rb"([ \t]*)`([^`\n]+)`([ \t]*)")
WRAP_JOIN_MAX_BYTES = 8 << 20  # joining soft-wrapped lines costs a Python pass over the lines
WRAP_MIN_WIDTH = 60
TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240, 250})


@dataclass
class Normalized:
    """A rewritten buffer and the offsets (in it) of the line breaks that were not in the original."""

    data: bytes
    added_breaks: list[int] = field(default_factory=list)

    def original_line(self, line_no: int, offset: int) -> int:
        """Line number in the original file of the line that starts at ``offset`` here."""
        return line_no - bisect_right(self.added_breaks, offset - 1)


def strip_ansi(data: bytes) -> bytes:
    """``data`` without ANSI colour and cursor codes (line breaks untouched); clean data is not copied."""
    if b"\x1b" not in data:
        return data
    return _ANSI.sub(b"", data).replace(b"\x1b", b"")


def strip_ansi_text(text: str) -> str:
    """``strip_ansi`` for decoded text (a progress line read as ``str``)."""
    if "\x1b" not in text:
        return text
    return _ANSI_TEXT.sub("", text).replace("\x1b", "")


def unwrap_inline_code(data: bytes) -> bytes:
    """``data`` with each line that is one Markdown inline-code span (`` `Killed` ``) read without its backticks,
    which become two spaces before the code (it still ends the line), so lengths and line numbers stay; data without a
    backtick is not copied."""
    pos = data.find(b"`")
    if pos < 0:
        return data
    out: bytearray | None = None
    while pos >= 0:  # only the lines that hold a backtick are looked at, each once
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        m = _INLINE_CODE_LINE.fullmatch(data, start, end)
        if m:
            out = out if out is not None else bytearray(data)
            out[start:end] = m[1] + b"  " + m[2] + m[3]
        pos = data.find(b"`", end)
    return bytes(out) if out is not None else data


def needs_normalizing(buf: Any) -> bool:
    """Whether the buffer holds an ESC or a CR (bytes and mmap both have a C-speed find)."""
    return buf.find(b"\x1b") >= 0 or buf.find(b"\r") >= 0


def normalize(buf: Any) -> Normalized:
    """Drop ANSI codes, make CRLF a LF and a lone CR a line break (remembered as added)."""
    data = bytes(buf)
    if b"\x1b" in data:
        data = _ANSI.sub(b"", data)
        data = data.replace(b"\x1b", b"")
    if b"\r" not in data:
        return Normalized(data)
    data = data.replace(b"\r\n", b"\n")
    added: list[int] = []
    pos = data.find(b"\r")
    while pos >= 0:
        added.append(pos)
        pos = data.find(b"\r", pos + 1)
    return Normalized(data.replace(b"\r", b"\n"), added)


def wrapped_joins(buf: Any) -> list[tuple[int, int, int, bytes]]:
    """Lines a terminal may have soft-wrapped, joined again: (first line, last line, offset, joined text).

    A line is taken as wrapped when it is at least ``WRAP_MIN_WIDTH`` characters long and its
    length is a common terminal width or the longest in the buffer; runs of such lines are
    joined with the line after them. Only small buffers (pasted fragments, ordinary logs) are
    looked at. The joins are scanned in addition to the lines, never instead of them."""
    if len(buf) > WRAP_JOIN_MAX_BYTES:
        return []
    raw = bytes(buf).split(b"\n")
    if len(raw) < 2:
        return []
    widths = [len(line.decode("utf-8", "replace")) if len(line) >= WRAP_MIN_WIDTH else 0 for line in raw]
    candidates = TERMINAL_WIDTHS | {max(widths)}
    offsets = [0]
    for line in raw[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    out: list[tuple[int, int, int, bytes]] = []
    i = 0
    while i < len(raw) - 1:
        j = i
        while j < len(raw) - 1 and widths[j] >= WRAP_MIN_WIDTH and widths[j] in candidates and raw[j + 1]:
            j += 1
        if j > i:
            out.append((i + 1, j + 1, offsets[i], b"".join(raw[i:j + 1])))
            i = j + 1
        else:
            i += 1
    return out
