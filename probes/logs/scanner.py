"""Multi-pattern scanning of log buffers: Hyperscan over mmapped files, Python ``re`` as fallback.

The scan only finds candidate lines (signature id, end offset); fields are
extracted with each signature's own regex on the hit lines alone.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from diagnose.probes.logs.scan_normalize import Normalized, needs_normalizing, normalize, wrapped_joins
from diagnose.probes.logs.signatures import Signature, SignatureSet

MAX_LINE = 4096          # bytes of a hit line kept as evidence text
MAX_HITS_PER_SIGNATURE = 200
TRACEBACK_LOOKBACK = 24_000
_WRITER = re.compile(r"(?:\([^)]*\) )?\[(?:rank|default)\d+\]:|\d+: ")  # who wrote an interleaved line
_TRACEBACK_START = "Traceback (most recent call last)"
_CALL = re.compile(r"\.(\w+)\(")  # calls in the source lines a traceback shows
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')

try:  # the fast engine is optional: a correct fallback exists
    import hyperscan  # type: ignore[import-untyped]
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
    dropped: dict[str, int] = field(default_factory=dict)


class Scanner:
    """Scans buffers for every signature at once."""

    def __init__(self, signatures: SignatureSet, engine: str | None = None) -> None:
        self.signatures = signatures
        self.engine = engine or ("hyperscan" if hyperscan is not None else "re")

    def prepare(self) -> None:
        """Build the scan database now (before forking workers that should share it)."""
        _ = self._hs_db if self.engine == "hyperscan" else self._re_any

    @cached_property
    def _hs_db(self) -> Any:
        cache = _cache_path(self.signatures.digest)
        try:
            return hyperscan.loadb(cache.read_bytes())
        except Exception:  # noqa: BLE001 - a missing or stale cache is rebuilt
            pass
        db = self._compile()
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(hyperscan.dumpb(db))
            tmp.replace(cache)
        except OSError:
            pass
        return db

    def _compile(self) -> Any:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        exprs = [s.detect.encode() for s in self.signatures.signatures]
        ml = hyperscan.HS_FLAG_MULTILINE
        flags = [ml | (hyperscan.HS_FLAG_CASELESS if s.caseless else 0) for s in self.signatures.signatures]
        db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
        return db

    @cached_property
    def _re_any(self) -> re.Pattern[bytes]:
        parts = []
        for s in self.signatures.signatures:
            prefix = "(?i)" if s.caseless else ""
            parts.append(f"(?:{prefix}{s.detect})" if not prefix else f"(?i:{s.detect})")
        return re.compile("|".join(parts).encode(errors="replace"), re.MULTILINE)

    def candidates(self, buf: Any) -> dict[int, tuple[set[int], int]]:
        """Map line-start offset -> (signature indexes that may match there, last match end)."""
        found: dict[int, tuple[set[int], int]] = {}
        if self.engine == "hyperscan" and len(buf):
            def on_match(sig_id: int, _start: int, end: int, _flags: int, _ctx: Any) -> None:
                start = buf.rfind(b"\n", 0, end) + 1
                ids, last = found.get(start, (set(), end))
                ids.add(sig_id)
                found[start] = (ids, max(last, end))
            self._hs_db.scan(buf, match_event_handler=on_match)
            return found
        every = set(range(len(self.signatures)))  # the exact regexes decide on each candidate line
        for m in self._re_any.finditer(buf):
            end = max(m.end(), m.start() + 1)
            found[buf.rfind(b"\n", 0, end - 1) + 1] = (every, end)
        return found

    def scan_buffer(self, buf: Any) -> BufferScan:
        """Find every signature hit in ``buf`` (bytes or mmap), with line numbers and fields.

        Clean buffers are scanned as they are; one with ANSI codes or carriage returns is
        normalized first (line numbers stay those of the original), and lines a terminal
        may have wrapped are also scanned joined."""
        norm = normalize(buf) if needs_normalizing(buf) else None
        data = norm.data if norm is not None else buf
        result = self._scan(data, norm)
        self._scan_joins(data, norm, result)
        return result

    def _scan_joins(self, data: Any, norm: Normalized | None, result: BufferScan) -> None:
        joins = wrapped_joins(data)
        if not joins:
            return
        seen = {(h.signature, h.line_no) for h in result.hits}
        joined = b"\n".join(text for _, _, _, text in joins)
        starts, pos = {}, 0
        for idx, (_, _, _, text) in enumerate(joins):
            starts[pos] = idx
            pos += len(text) + 1
        sigs = self.signatures.signatures
        for start, (ids, _end) in sorted(self.candidates(joined).items()):
            if start not in starts:
                continue
            first, last, offset, raw = joins[starts[start]]
            text = raw.decode("utf-8", "replace")[:MAX_LINE]
            line_no = norm.original_line(first, offset) if norm is not None else first
            for sig_idx in sorted(ids):
                sig = sigs[sig_idx]
                if any((sig.name, n) in seen for n in range(line_no, line_no + last - first + 1)):
                    continue
                fields = sig.match(text)
                if fields is None:
                    continue
                if sig.traceback:
                    fields = {**fields, **_traceback_fields(data, offset)}
                result.hits.append(Hit(sig.name, line_no, text, fields))
        result.hits.sort(key=lambda h: h.line_no)

    def _scan(self, buf: Any, norm: Normalized | None) -> BufferScan:
        result = BufferScan()
        sigs = self.signatures.signatures
        counts: dict[str, int] = {}
        line_no, pos = 1, 0
        candidates = self.candidates(buf)
        for start in sorted(candidates):
            line_no += buf[pos:start].count(b"\n")
            pos = start
            ids, match_end = candidates[start]
            text = _line_window(buf, start, match_end)
            for sig_idx in sorted(ids):
                sig = sigs[sig_idx]
                fields = sig.match(text)
                if fields is None:
                    continue
                counts[sig.name] = counts.get(sig.name, 0) + 1
                if counts[sig.name] > MAX_HITS_PER_SIGNATURE:
                    result.dropped[sig.name] = result.dropped.get(sig.name, 0) + 1
                    continue
                if sig.traceback:
                    fields = {**fields, **_traceback_fields(buf, start)}
                hit_line = norm.original_line(line_no, start) if norm is not None else line_no
                result.hits.append(Hit(sig.name, hit_line, text, fields))
        return result


def _line_window(buf: Any, start: int, match_end: int) -> str:
    """The hit line, or on a very long line the MAX_LINE bytes around the match."""
    lo = start if match_end - start <= MAX_LINE // 2 else match_end - MAX_LINE // 2
    end = buf.find(b"\n", match_end, lo + MAX_LINE)
    hi = end if end >= 0 else min(len(buf), lo + MAX_LINE)
    return bytes(buf[lo:hi]).decode("utf-8", "replace").rstrip("\r")


def _cache_path(digest: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diagnose" / f"signatures-{digest}-{getattr(hyperscan, '__version__', 'x')}.hsdb"


def _traceback_fields(buf: Any, start: int) -> dict[str, Any]:
    """Frames of the traceback just above a line (innermost last), from lines of the same writer only.

    Interleaved output of several ranks is told apart by the line prefix (``[rank1]:``, ``1: ``);
    the walk stops at that writer's ``Traceback (most recent call last):``."""
    lo = max(0, start - TRACEBACK_LOOKBACK)
    end = buf.find(b"\n", start, start + MAX_LINE)
    hit_line = bytes(buf[start:end if end >= 0 else start + 200]).decode("utf-8", "replace")
    prefix = _prefix(hit_line)
    own: list[str] = []
    for line in reversed(bytes(buf[lo:start]).decode("utf-8", "replace").splitlines()):
        if _prefix(line) != prefix:
            continue
        if _TRACEBACK_START in line:
            break
        own.append(line)
    own.reverse()
    chunk = "\n".join(own)
    frames = _FRAME.findall(chunk)
    if not frames:
        return {}
    names = [f[2] for f in frames[-30:]] + _CALL.findall(chunk[-3000:])
    files = [os.path.basename(f[0]) for f in frames[-30:]]
    return {"frames": ",".join(names), "frame_files": ",".join(files), "frame_path": frames[-1][0],
            "frame_line": int(frames[-1][1])}


def _prefix(line: str) -> str:
    m = _WRITER.match(line)
    return m.group(0) if m else ""


def signature_expressions(signatures: SignatureSet) -> list[Signature]:
    """The signatures in scan order (exported for benchmarks that compare with grep)."""
    return list(signatures.signatures)
