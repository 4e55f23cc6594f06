"""Multi-pattern scanning of log text streamed in blocks: Hyperscan, Python ``re`` as fallback.

The scan only finds candidate lines (signature id, end offset); fields are
extracted with each signature's own regex on the hit lines alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PureWindowsPath
from typing import Any

import diagnose.cache as scan_cache
from diagnose.probes.logs import scan_form as scan_form_module
from diagnose.probes.logs.scan_form import hit_form, scan_form
from diagnose.probes.logs.scan_normalize import strip_ansi, unwrap_inline_code, wrapped_joins
from diagnose.probes.logs.signatures import Signature, SignatureSet

MAX_LINE = 4096          # bytes of a hit line kept as evidence text
TRACEBACK_LOOKBACK = 24_000
LONG_LINE = 32 << 20     # a line longer than this is scanned in pieces that overlap by OVERLAP
OVERLAP = 64 << 10       # (a match longer than this across a piece boundary is not seen)
LONG_LINE_WINDOWS = 64   # candidate windows tried per signature on one long line
MMAP_ABOVE = 32 << 20    # allocations above this are mapped (and unmapped when freed): see _reuse_freed_memory
COUNT_PIECE = 1 << 18    # bytes compared at a time when counting newlines with numpy
UNCOUNTED_MAX = 32 << 20  # dropped bytes whose newlines wait for a hit that needs a line number
CONTEXT = max(TRACEBACK_LOOKBACK, MAX_LINE)  # bytes kept before the scan point
PROSE_COMPONENT = "report"  # a user's own sentences: read on lines that start in a file's first PROSE_HEAD bytes
PROSE_HEAD = 1 << 20  # a report is short; past this a file is machine output (~1,000 of ~5,600 literals spared)
_WRITER = re.compile(r"(?:\([^)]*\) )?\[(?:rank|default)\d+\]:|\d+: ")  # who wrote an interleaved line
_TRACEBACK_START = "Traceback (most recent call last)"
_CALL = re.compile(r"\.(\w+)\(")  # calls in the source lines a traceback shows
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
# IPython / Jupyter tracebacks: 'File ~/x.py:618, in save(obj, f)' (IPython 8), 'Cell In[3], line 5' (an IPython 8
# cell), '~/x.py in save(obj, f)' or '<ipython-input-2-..> in train(..)' with the line in the '---> 16' marker below
# (IPython 7). The header names the exception first: 'KeyError      Traceback (most recent call last)'.
_NB_FRAME8 = re.compile(r'^\s*File (\S[^\n]{0,1000}?):(\d+), in ([\w<>.]+)')
_NB_CELL = re.compile(r'^\s*Cell In ?\[\d*\], line (\d+)')
_NB_FRAME7 = re.compile(r'^\s*((?:~|/|[A-Za-z]:\\|<ipython-input-)[^\n]{0,1000}?(?:\.py|>)) in ([\w<>.]+)(?:\(|\s*$)')
_NB_ARROW = re.compile(r'^-*> ?(\d+)')
NB_LOOKAHEAD = 24_000  # bytes after a notebook traceback header searched for its frames

_NUMPY: Any = None  # set by Scanner.prepare where numpy is installed

try:  # the fast engine is optional: a correct fallback exists
    import hyperscan  # type: ignore[import-untyped]  # optional dependency: hyperscan
except ImportError:  # pragma: no cover - exercised where the wheel is missing
    hyperscan = None


@dataclass
class Hit:
    """One line that matched one signature."""

    signature: str
    line_no: int
    text: str
    fields: dict[str, Any]


@dataclass
class BufferScan:
    """What a scan of one buffer found."""

    hits: list[Hit] = field(default_factory=list)


class Scanner:
    """Scans buffers for every signature at once."""

    def __init__(self, signatures: SignatureSet, engine: str | None = None) -> None:
        self.signatures = signatures
        self.engine = engine or ("hyperscan" if hyperscan is not None else "re")

    def prepare(self) -> None:
        """Build the scan database now (before forking workers that should share it), keep freed blocks
        for the next read, and take numpy where it is installed to count newlines (big inputs only: its
        import costs a tenth of a second)."""
        global _NUMPY
        _ = (self._hs_db, self._hs_db_past_head) if self.engine == "hyperscan" else (self._re_any, self._re_past_head)
        _reuse_freed_memory()
        try:
            import numpy  # optional dependency: newline counts at memory speed (bytes.count: ~1 GB/s)
        except ImportError:  # pragma: no cover - where numpy is missing
            return
        _NUMPY = numpy

    @cached_property
    def _prose(self) -> frozenset[int]:
        return frozenset(i for i, s in enumerate(self.signatures.signatures) if s.component == PROSE_COMPONENT)

    @cached_property
    def _past_head(self) -> list[int]:
        """The signatures read on lines that start past a file's first PROSE_HEAD bytes."""
        return [i for i in range(len(self.signatures)) if i not in self._prose]

    @cached_property
    def _hs_db(self) -> Any:
        return self._hs_database(list(range(len(self.signatures))), "")

    @cached_property
    def _hs_db_past_head(self) -> Any:
        return self._hs_database(self._past_head, "-past-head") if self._prose else self._hs_db

    def _hs_database(self, ids: list[int], label: str) -> Any:
        forms = scan_cache.digest([Path(scan_form_module.__file__).read_bytes()])[:8]  # how detects become forms
        return scan_cache.hyperscan_database(f"signatures-vectored-{self.signatures.digest}-{forms}{label}",
                                             lambda: self._compile(ids), hyperscan.HS_MODE_VECTORED)

    def _compile(self, ids: list[int]) -> Any:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_VECTORED)  # a block and the kept bytes before it, uncopied
        sigs = [self.signatures.signatures[i] for i in ids]
        exprs = [scan_form(s.detect, s.caseless).encode() for s in sigs]
        flags = [hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_CASELESS if s.caseless else 0) for s in sigs]
        db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        return db

    @cached_property
    def _re_any(self) -> re.Pattern[bytes]:
        return _alternation(self.signatures.signatures)

    @cached_property
    def _re_past_head(self) -> re.Pattern[bytes]:  # without report signatures, the same pattern compiled once
        return _alternation([self.signatures.signatures[i] for i in self._past_head]) if self._prose else self._re_any

    def scan_buffer(self, buf: Any) -> BufferScan:
        """Every signature hit in ``buf`` (bytes-like), with line numbers and fields, lines a
        terminal wrapped included."""
        data = bytes(buf)
        hits = list(self.scan_blocks([data]))
        return BufferScan(hits=hits + self.scan_joins(strip_ansi(data), hits))

    def scan_joins(self, data: bytes, hits: list[Hit]) -> list[Hit]:
        """Hits that only the soft-wrapped lines of ``data``, joined again, show (never a repeat)."""
        joins = wrapped_joins(data.replace(b"\r\n", b"\n") if b"\r" in data else data)  # CRLF ends a line
        if not joins:
            return []
        seen = {(h.signature, h.line_no) for h in hits}
        out = []
        for hit in self.scan_blocks([b"\n".join(text for _, _, _, text in joins)]):
            first, last, _offset, _raw = joins[hit.line_no - 1]
            if any((hit.signature, n) in seen for n in range(first, last + 1)):
                continue
            out.append(Hit(hit.signature, first, hit.text, hit.fields))
        return out

    def scan_blocks(self, blocks: Iterable[bytes]) -> Iterator[Hit]:
        """Every signature hit in the concatenation of ``blocks``, in order, in time and memory
        linear in the bytes whatever the line lengths (a line longer than LONG_LINE is scanned
        in overlapping pieces). ``\n`` and ``\r`` both end a line's text (tqdm redraws with
        ``\r``); line numbers count ``\n``."""
        state = _ScanState()
        for block in blocks:
            if block:
                # Colour codes hide the literal cores of messages; removing them keeps every \n.
                yield from self._feed(state, strip_ansi(block), final=False)
        yield from self._feed(state, b"", final=True)

    def _feed(self, st: _ScanState, block: bytes, final: bool) -> Iterator[Hit]:
        # A lone CR (tqdm redrawing its bar) ends a line for the patterns too: it is scanned as a LF,
        # byte for byte, while line numbers count the original LFs (kept in `orig`).
        # A line pasted as Markdown inline code (`Killed`) is scanned without its two backticks (same length).
        scanned = unwrap_inline_code(block.replace(b"\r", b"\n") if b"\r" in block else block)
        # The block waits beside the kept bytes (`pend`): Hyperscan reads both pieces as one (vectored), and
        # they are joined (one copy of the block) only where the scan found a candidate line.
        st.pend, st.pend_orig = scanned, block
        if final or self.engine != "hyperscan":
            st.join()
        while True:
            lo = st.scan_from - st.base
            size = len(st.buf) + len(st.pend)
            if final:
                cut = accept = st.base + size
            else:
                nl = st.rfind_newline(lo)
                if nl >= 0:
                    cut = accept = st.base + nl + 1
                elif size - lo >= LONG_LINE:
                    cut = st.base + size
                    accept = cut - MAX_LINE  # leave room for the window after a match
                else:
                    st.join()
                    return
            if cut > st.scan_from:
                yield from self._scan_region(st, st.scan_from, cut, accept)
            st.accepted = max(st.accepted, accept)
            next_from = accept if accept == cut else accept - OVERLAP
            st.scan_from = max(next_from, st.scan_from + 1) if not final else cut
            keep_from = max(0, min(st.scan_from, st.accepted) - CONTEXT - st.base)
            if keep_from:
                st.defer_count(st.base + keep_from)  # the newlines about to go are counted when a hit needs them
                st.drop(keep_from)
            if final or accept == cut:
                st.join()
                return

    def _scan_region(self, st: _ScanState, r0: int, r1: int, accept: int) -> Iterator[Hit]:
        found: dict[int, dict[int, int]] = {}  # line start -> signature index -> first match end
        more: dict[tuple[int, int], list[int]] = {}  # (long line start, signature) -> ends with their own windows
        if self.engine == "hyperscan":
            ends: list[tuple[int, int]] = []
            head = r0 < PROSE_HEAD
            (self._hs_db if head else self._hs_db_past_head).scan(st.pieces(r0 - st.base, r1 - st.base),
                    match_event_handler=lambda sig_id, _s, end, _f, _c: ends.append((sig_id, end)))
            if not ends:
                return
        st.join()
        buf, base = st.buf, st.base

        def seg_start(end: int) -> int:
            """Start of the line that holds the byte before ``end`` (amortised linear; _feed made each CR a LF)."""
            stop = end - 1
            if stop > st.brk_searched:
                a = max(st.brk_searched, base) - base
                b = stop - base
                brk = buf.rfind(b"\n", a, b)
                if brk >= 0:
                    st.brk = base + brk + 1
                st.brk_searched = stop
            return st.brk

        if self.engine == "hyperscan":
            for sig_id, end in ends:
                end += r0
                if end <= st.accepted or end > accept:
                    continue
                start = seg_start(end)
                if head and start >= PROSE_HEAD and sig_id in self._prose:
                    continue
                line = found.setdefault(start, {})
                first = line.get(sig_id)
                if first is None:
                    line[sig_id] = end
                elif end - start > MAX_LINE // 2:  # a long line: a literal form may first hit where the regex fails
                    ends_here = more.setdefault((start, sig_id), [first])
                    if len(ends_here) < LONG_LINE_WINDOWS and end - ends_here[-1] >= MAX_LINE // 2:
                        ends_here.append(end)
        else:
            all_sigs = range(len(self.signatures))  # the exact regexes decide on each candidate line
            for m in (self._re_any if r0 < PROSE_HEAD else self._re_past_head).finditer(buf, r0 - base, r1 - base):
                # a match that runs on past a line's \n ('\s*$' where the piece ends) belongs to the line it starts in
                nl = buf.find(b"\n", m.start() + 1, m.end())
                end = base + (nl if nl >= 0 else max(m.end(), m.start() + 1))
                if end <= st.accepted or end > accept:
                    continue
                start = seg_start(end)
                every = all_sigs if start < PROSE_HEAD else self._past_head
                if end - start > MAX_LINE // 2:  # a long line: each match has its own window
                    yield from self._hits_at(st, found)
                    found = {}
                    yield from self._hits_at(st, {start: dict.fromkeys(every, end)})
                elif start not in found:
                    found[start] = dict.fromkeys(every, end)
        yield from self._hits_at(st, found, more)

    def _hits_at(self, st: _ScanState, found: dict[int, dict[int, int]],
                 more: dict[tuple[int, int], list[int]] | None = None) -> Iterator[Hit]:
        sigs = self.signatures.signatures
        buf, base = st.buf, st.base
        more = more or {}
        for start in sorted(found):
            line_no = 0  # counted once a signature's regex takes the line
            windows: dict[int, str] = {}
            if start != st.line_start:
                st.line_start, st.line_sigs = start, set()
            for sig_idx, first_end in sorted(found[start].items()):
                sig = sigs[sig_idx]
                if sig_idx in st.line_sigs:  # one hit per signature and line (long lines span pieces)
                    continue
                for end in more.get((start, sig_idx), (first_end,)):
                    key = end if end - start > MAX_LINE // 2 else -1
                    if key not in windows:
                        windows[key] = _line_window(buf, base, start, end)
                    fields = sig.match(windows[key])
                    if fields is not None:
                        break
                if fields is None:
                    continue
                st.line_sigs.add(sig_idx)
                if sig.traceback and start >= base:
                    fields = {**fields, **_traceback_fields(buf, start - base)}
                line_no = line_no or st.line_no_at(start, buf, base)
                yield Hit(sig.name, line_no, windows[key], fields)


@dataclass
class _ScanState:
    """Where a streamed scan stands: the bytes kept, and absolute offsets into the whole input."""

    buf: bytes = b""         # what the patterns see (CR made LF)
    orig: bytes = b""        # the same bytes as read (line numbers count its LFs)
    pend: bytes = b""        # the block being fed, after `buf` (not yet joined to it), and as read
    pend_orig: bytes = b""
    base: int = 0            # offset of buf[0]
    scan_from: int = 0       # next byte to scan
    accepted: int = 0        # matches ending at or before this were already reported
    brk: int = 0             # start of the line that holds the last searched byte
    brk_searched: int = 0    # bytes before this were searched for line breaks
    nl_pos: int = 0          # newlines before this offset are counted in nl_count
    nl_count: int = 0
    line_start: int = -1     # the line whose hits are being reported, and its signatures already hit
    line_sigs: set[int] = field(default_factory=set)

    uncounted: list[tuple[bytes, int, int]] = field(default_factory=list)  # dropped bytes not yet counted
    uncounted_bytes: int = 0

    def join(self) -> None:
        """Append the pending block to the kept bytes (one buffer serves both when no CR was made a LF)."""
        if not self.pend:
            return
        same = self.orig is self.buf and self.pend_orig is self.pend
        self.buf = self.buf + self.pend if self.buf else self.pend
        self.orig = self.buf if same else (self.orig + self.pend_orig if self.orig else self.pend_orig)
        self.pend = self.pend_orig = b""

    def rfind_newline(self, lo: int) -> int:
        """Offset (from ``base``) of the last LF at or after ``lo`` in the kept bytes and the pending block."""
        n = len(self.buf)
        found = self.pend.rfind(b"\n", max(lo - n, 0))
        if found >= 0:
            return n + found
        return self.buf.rfind(b"\n", lo) if lo < n else -1

    def pieces(self, lo: int, hi: int) -> list[memoryview]:
        """Bytes ``lo:hi`` (from ``base``) of the kept bytes and the pending block, as (at most two) views."""
        n = len(self.buf)
        out = [memoryview(self.buf)[lo:min(hi, n)]] if lo < n else []
        if hi > n:
            out.append(memoryview(self.pend)[max(lo - n, 0):hi - n])
        return out

    def drop(self, keep_from: int) -> None:
        """Let go of the bytes before ``keep_from`` (from ``base``): only what is kept is copied."""
        n = len(self.buf)
        if keep_from < n:
            self.join()
            same = self.orig is self.buf
            self.buf = self.buf[keep_from:]
            self.orig = self.buf if same else self.orig[keep_from:]
        else:
            same = self.orig is self.buf and self.pend_orig is self.pend
            self.buf = self.pend[keep_from - n:]
            self.orig = self.buf if same else self.pend_orig[keep_from - n:]
            self.pend = self.pend_orig = b""
        self.base += keep_from

    def line_no_at(self, start: int, buf: bytes, base: int) -> int:
        """1-based line number at ``start`` (offsets only move forward; a line start before the
        counted point has no newline after it up to there)."""
        if self.uncounted:
            self._count_uncounted(0)
        if start > self.nl_pos:
            self.nl_count += _count_newlines(self.orig, self.nl_pos - self.base, start - self.base)
            self.nl_pos = start
        return self.nl_count + 1

    def defer_count(self, upto: int) -> None:
        """The kept bytes before ``upto`` are about to be dropped: keep them (not a copy) to count their
        newlines only when a later hit needs a line number, so bytes after a file's last hit are never
        counted; past UNCOUNTED_MAX bytes the oldest are counted and let go."""
        if upto <= self.nl_pos:
            return
        lo, hi, n = self.nl_pos - self.base, upto - self.base, len(self.orig)
        if lo < n:
            self.uncounted.append((self.orig, lo, min(hi, n)))
        if hi > n:
            self.uncounted.append((self.pend_orig, max(lo - n, 0), hi - n))
        self.uncounted_bytes += upto - self.nl_pos
        self.nl_pos = upto
        if self.uncounted_bytes > UNCOUNTED_MAX:
            self._count_uncounted(UNCOUNTED_MAX // 2)

    def _count_uncounted(self, keep: int) -> None:
        """Count the newlines of the oldest deferred pieces until at most ``keep`` bytes remain deferred."""
        while self.uncounted and self.uncounted_bytes > keep:
            data, lo, hi = self.uncounted.pop(0)
            self.nl_count += _count_newlines(data, lo, hi)
            self.uncounted_bytes -= hi - lo


def _alternation(sigs: list[Signature]) -> re.Pattern[bytes]:
    parts = [f"(?i:{s.detect})" if s.caseless else f"(?:{s.detect})" for s in sigs]
    return re.compile("|".join(parts).encode(errors="replace"), re.MULTILINE)


def _reuse_freed_memory() -> None:
    """glibc only: keep freed memory in the process instead of handing it back at once. A block read (1 MiB)
    is otherwise mapped afresh, or the heap trimmed and grown again, for each block: page faults that cost
    the scan a seventh of its time on the benchmark corpus (3,800 -> 12,000 faults per 64 MB read)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
    except (ValueError, OSError, AttributeError):  # not glibc
        return
    import ctypes  # start-up: only big inputs (Scanner.prepare) pay for loading ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - a libc without it
        return
    mallopt(-3, MMAP_ABOVE)  # M_MMAP_THRESHOLD: blocks come from the heap, where freed ones are reused
    mallopt(-1, 2 * MMAP_ABOVE)  # M_TRIM_THRESHOLD: free heap top kept up to this


def _count_newlines(data: bytes, lo: int, hi: int) -> int:
    """Newlines in ``data[lo:hi]`` (numpy on big spans once ``Scanner.prepare`` found it, a piece at a time
    into one small array that stays in cache)."""
    if _NUMPY is None or hi - lo <= 1 << 16:
        return data.count(b"\n", lo, hi)
    np = _NUMPY
    bytes_ = np.frombuffer(data, np.uint8, hi - lo, lo)
    equal = np.empty(min(COUNT_PIECE, hi - lo), np.bool_)
    total = 0
    for i in range(0, hi - lo, COUNT_PIECE):
        piece = bytes_[i:i + COUNT_PIECE]
        out = equal[:len(piece)]
        np.equal(piece, 10, out=out)
        total += int(np.count_nonzero(out))
    return total


def _line_window(buf: bytes, base: int, start: int, match_end: int) -> str:
    """The hit line (up to its ``\n``: a CR was made one before the scan), or on a very long line the MAX_LINE
    bytes around the match."""
    lo = start if match_end - start <= MAX_LINE // 2 else match_end - MAX_LINE // 2
    lo = max(lo, base) - base
    limit = min(len(buf), lo + MAX_LINE)
    cut = buf.find(b"\n", match_end - base, limit)
    hi = cut if cut >= 0 else limit
    return buf[lo:hi].decode("utf-8", "replace")


def _traceback_fields(buf: bytes, start: int) -> dict[str, Any]:
    """Frames of the traceback just above a line (innermost last), from lines of the same writer only.

    Interleaved output of several ranks is told apart by the line prefix (``[rank1]:``, ``1: ``);
    the walk stops at that writer's ``Traceback (most recent call last):``. A notebook (IPython)
    header names the exception before its frames, so on such a line the frames are read below it."""
    end = buf.find(b"\n", start, start + MAX_LINE)
    hit_line = bytes(buf[start:end if end >= 0 else start + 200]).decode("utf-8", "replace")
    prefix = _prefix(hit_line)
    own: list[str] = []
    if _TRACEBACK_START in hit_line and end >= 0:
        for line in bytes(buf[end + 1:end + 1 + NB_LOOKAHEAD]).decode("utf-8", "replace").splitlines():
            if _TRACEBACK_START in line:
                break
            if _prefix(line) == prefix:
                own.append(line)
    else:
        lo = max(0, start - TRACEBACK_LOOKBACK)
        for line in reversed(bytes(buf[lo:start]).decode("utf-8", "replace").splitlines()):
            if _prefix(line) != prefix:
                continue
            if _TRACEBACK_START in line:
                break
            own.append(line)
        own.reverse()
    frames = _frames_in(own)
    if not frames:
        return {}
    chunk = "\n".join(own)
    names = [f[2] for f in frames[-30:]] + _CALL.findall(chunk[-3000:])
    files = [PureWindowsPath(f[0]).name for f in frames[-30:]]  # / and \\ (a Windows paste)
    return {"frames": ",".join(names), "frame_files": ",".join(files), "frame_path": frames[-1][0],
            "frame_line": int(frames[-1][1])}


def _frames_in(lines: list[str]) -> list[tuple[str, int, str]]:
    """(path, line, function) of each frame line, CPython's form or IPython's (line 0 when not shown)."""
    out: list[tuple[str, int, str]] = []
    for i, line in enumerate(lines):
        cpython = [(m[1], int(m[2]), m[3]) for m in _FRAME.finditer(line)]  # a flattened paste has several
        if cpython:
            out.extend(cpython)
        elif m := _NB_FRAME8.match(line):
            out.append((m[1], int(m[2]), m[3]))
        elif m := _NB_CELL.match(line):
            out.append(("<cell>", int(m[1]), "<module>"))
        elif m := _NB_FRAME7.match(line):
            lineno = next((int(a[1]) for nxt in lines[i + 1:i + 12] if (a := _NB_ARROW.match(nxt))), 0)
            out.append((m[1], lineno, m[2]))
    return out


def _prefix(line: str) -> str:
    m = _WRITER.match(line)
    return m.group(0) if m else ""


def signature_expressions(signatures: SignatureSet) -> list[Signature]:
    """The signatures in scan order (exported for benchmarks that compare with grep)."""
    return list(signatures.signatures)


__all__ = ["MAX_LINE", "BufferScan", "Hit", "Scanner", "hit_form", "signature_expressions"]
