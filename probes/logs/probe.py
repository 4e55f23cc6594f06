"""The log probe: turns the files a run left behind into LogLine evidence, reading each file once.

Each file is opened once and read in blocks (``read_one``): by its head it is an evidence file,
a torchelastic error file, a flight-recorder dump, or a log. Logs are scanned for every
signature at once (in parallel for big inputs); fields are extracted on hit lines only; then
the content parsers (``probes/logs/content.py``: step-time lines, artifacts) see the same
bytes. Hit lines quoted are capped per signature, never the first line of each rank. Ranks come from line prefixes (``[rank3]:``), launcher prefixes,
file names, and what the line itself says. Evidence files written by the live probe
or the library hook (``*.jsonl`` evidence, per-rank report JSON) are loaded as they are.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from diagnose.evidence import LogLine, Provenance, parse_evidence
from diagnose.probes import progress
from diagnose.probes.artifacts import PRODUCES
from diagnose.probes.files import BINARY_PROBE, Skip, Source, looks_binary, open_source, total_size, walk
from diagnose.probes.logs import flight_recorder
from diagnose.probes.logs.content import VIEW_BYTES, FileView, content_parsers, run_parsers
from diagnose.probes.logs.scan_normalize import strip_ansi
from diagnose.probes.logs.scanner import Scanner
from diagnose.probes.logs.signatures import SignatureSet, load_signatures
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

PARALLEL_BYTES = 48 << 20  # below this (and PARALLEL_FILES), a process pool costs more than it saves
PARALLEL_FILES = 256       # many small rank logs: the cost is per file and per hit, not per byte
MAX_EVIDENCE_FILE = 256 << 20  # evidence and error files are read whole: bounded


@dataclass
class ProbeResult:
    """Evidence a probe collected, and what it could not read."""

    evidence: list[Any] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    scanned: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _rank_patterns() -> tuple[list[re.Pattern[str]], list[re.Pattern[str]], list[re.Pattern[str]]]:
    data, _ = load_yaml_with_lines(builtin_rules_dir() / "rank_sources.yaml")
    paths = [re.compile(p, re.IGNORECASE) for p in data["path_patterns"]]
    prefixes = [re.compile(p) for p in data["line_prefixes"]]
    stamps = [re.compile(p) for p in data.get("timestamps", [])]
    return paths, prefixes, stamps


def time_from_line(text: str) -> float | None:
    """Seconds since the epoch (UTC) when the line carries a timestamp; glog lines get the current year."""
    for pat in _rank_patterns()[2]:
        m = pat.search(text[:200])
        if not m:
            continue
        parts = m.groupdict()
        hms = parts["hms"].replace(",", ".")
        year = int(parts.get("year") or _THIS_YEAR)
        try:
            day = datetime.datetime(year, int(parts["month"]), int(parts["day"]), tzinfo=datetime.timezone.utc)
            h, mi, sec = hms.split(":")
        except ValueError:
            continue
        return day.timestamp() + int(h) * 3600 + int(mi) * 60 + float(sec)
    return None


_THIS_YEAR = datetime.date.today().year


def rank_from_path(path: str) -> int | None:
    """Rank named by a file or folder name (rank3.log, rank-3/, attempt_0/3/stderr.log)."""
    return _first_rank(pat.search(path) for pat in _rank_patterns()[0])


def rank_from_line(text: str) -> int | None:
    """Rank named by a line prefix such as ``[rank3]:`` or ``[default3]:``."""
    return _first_rank(pat.match(text) for pat in _rank_patterns()[1])


def _first_rank(matches: Iterable[re.Match[str] | None]) -> int | None:
    return next((int(m.group("rank")) for m in matches if m), None)


MAX_QUOTED_PER_SIGNATURE = 200  # hit lines kept per signature and file beyond the first of each rank
MAX_QUOTED_TAIL = 200  # and its last lines beyond those: where a run ended (a hang's last collectives) is at the end
_WORKER_SCANNER: Scanner | None = None  # set before forking: workers inherit the compiled database
_WORKER_PARSERS: list[Any] = []
_DUMP_SLOT: Any = None  # one flight-recorder dump decoded at a time across all workers (memory bound)


@dataclass
class FileResult:
    """What one file gave: evidence records (files of evidence first, then log lines, then parsers')."""

    loaded: list[Any] = field(default_factory=list)    # evidence files, error files, dumps
    records: list[Any] = field(default_factory=list)   # log lines
    parsed: list[Any] = field(default_factory=list)    # content parsers' evidence
    skipped: list[Skip] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    scanned: bool = False


def _scan_in_worker(path: str) -> FileResult:
    if _WORKER_SCANNER is None:
        raise RuntimeError("scan worker started without a scanner")
    return read_one(path, _WORKER_SCANNER, _WORKER_PARSERS)


def read_one(path: str, scanner: Scanner, parsers: list[Any]) -> FileResult:
    """Open ``path`` once and get everything from that one read: it is an evidence file, a
    torchelastic error file, a flight-recorder dump, or a log (scanned, then shown to the parsers)."""
    source = open_source(Path(path), text_only=False)
    if isinstance(source, Skip):
        return FileResult(skipped=[source])
    try:
        return _read_source(path, source, scanner, parsers)
    except MemoryError:
        return FileResult(skipped=[Skip(path, "not enough memory to read it")])
    finally:
        source.close()


def _read_source(path: str, source: Source, scanner: Scanner, parsers: list[Any]) -> FileResult:
    p = Path(path)
    head = source.head
    if not source.compressed and _is_evidence_file(p, head):
        return _load_evidence_file(path, source)
    if not source.compressed and _is_error_file(p, head):
        return _load_error_file(path, source)
    if not source.compressed and flight_recorder.looks_like_dump_head(head):
        return _load_dump(path, source)
    if looks_binary(head[:BINARY_PROBE]):
        return FileResult(skipped=[Skip(path, "binary file (after decompression)" if source.compressed
                                        else "binary file")])
    return _scan_log(path, source, scanner, parsers)


def _scan_log(path: str, source: Source, scanner: Scanner, parsers: list[Any]) -> FileResult:
    out = FileResult(scanned=True)
    file_rank = rank_from_path(path)
    kept: dict[str, int] = {}
    ranks_kept: set[tuple[str, int | None]] = set()
    dropped: dict[str, int] = {}
    view: list[bytes] = []
    viewed = 0

    def blocks() -> Iterable[bytes]:
        nonlocal viewed
        for block in source.blocks():
            if viewed <= VIEW_BYTES:
                view.append(block[:VIEW_BYTES + 1 - viewed])
                viewed += len(view[-1])
            yield block

    seen: list[Any] = []

    def hits() -> Iterable[Any]:
        for hit in scanner.scan_blocks(blocks()):
            seen.append(hit)
            yield hit
        if viewed <= VIEW_BYTES:  # a small file: lines a terminal wrapped are read joined too
            yield from scanner.scan_joins(strip_ansi(b"".join(view)), seen)

    tail: dict[str, deque[tuple[Any, int | None]]] = {}

    def record(hit: Any, rank: int | None) -> dict[str, Any]:
        return {
            "kind": "log_line", "signature": hit.signature, "rank": rank, "fields": dict(hit.fields),
            "text": hit.text[:2000], "provenance": {"probe": "logs", "source": path, "line": hit.line_no},
            "time": time_from_line(hit.text),
        }

    for hit in hits():
        rank = rank_from_line(hit.text)
        if rank is None:
            rank = hit.fields.get("rank") if isinstance(hit.fields.get("rank"), int) else file_rank
        n = kept.get(hit.signature, 0)
        if n >= MAX_QUOTED_PER_SIGNATURE and (hit.signature, rank) in ranks_kept:
            dropped[hit.signature] = dropped.get(hit.signature, 0) + 1
            tail.setdefault(hit.signature, deque(maxlen=MAX_QUOTED_TAIL)).append((hit, rank))
            continue
        kept[hit.signature] = n + 1
        ranks_kept.add((hit.signature, rank))
        out.records.append(record(hit, rank))
    for sig, last in tail.items():  # the last lines of each signature past the cap, in file order
        out.records.extend(record(hit, rank) for hit, rank in last)
        dropped[sig] -= len(last)
    dropped = {sig: n for sig, n in dropped.items() if n}
    if source.note:
        out.notes.append(f"{path}: {source.note}")
    out.notes += [f"{path}: {n} more '{sig}' lines not kept (the first and last lines are, and the first of every rank)"
                  for sig, n in dropped.items()]
    if parsers:
        data = b"".join(view)
        complete = viewed <= VIEW_BYTES
        fv = FileView(path=path, data=data[:VIEW_BYTES], complete=complete, size=source.total,
                      signatures=frozenset(kept), rank=file_rank)
        got = run_parsers(fv, parsers)
        out.parsed.extend(got.evidence)
        out.notes.extend(got.notes)
    return out


def _load_dump(path: str, source: Source) -> FileResult:
    if source.size > flight_recorder.MAX_DUMP_BYTES:
        return FileResult(skipped=[Skip(path, f"flight-recorder dump larger than "
                                              f"{flight_recorder.MAX_DUMP_BYTES >> 20} MiB")])
    slot = _DUMP_SLOT
    if slot is not None:
        slot.acquire()
    try:
        data = source.read_all(flight_recorder.MAX_DUMP_BYTES)
        if data is None:
            return FileResult(skipped=[Skip(path, "flight-recorder dump larger than "
                                                  f"{flight_recorder.MAX_DUMP_BYTES >> 20} MiB")])
        dump = flight_recorder.parse_dump(data, path)
        del data
        if isinstance(dump, Skip):
            return FileResult(skipped=[dump])
        rank = rank_from_path(Path(path).name)  # the file's own name first: a folder may say "rank_1" too
        evidence, notes = flight_recorder.safe_dump_evidence(dump, path, rank if rank is not None else
                                                             rank_from_path(path))
    finally:
        if slot is not None:
            slot.release()
    return FileResult(loaded=evidence, notes=notes)


def _load_error_file(path: str, source: Source) -> FileResult:
    """A torchelastic error file (@record): the failed rank's message and full traceback."""
    try:
        raw = source.read_all(MAX_EVIDENCE_FILE)
        if raw is None:
            raise ValueError(f"larger than {MAX_EVIDENCE_FILE >> 20} MiB")
        data = json.loads(raw.decode("utf-8", "replace"))
        message = data["message"]
        if isinstance(message, str):
            text, stamp = message, None
        else:
            extra = message.get("extraInfo") or {}
            text = f"{extra.get('py_callstack') or ''}\n{message.get('message') or ''}"
            stamp = float(extra["timestamp"]) if str(extra.get("timestamp", "")).isdigit() else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        return FileResult(skipped=[Skip(path, f"invalid torchelastic error file: {str(exc)[:120]}")])
    rank = rank_from_path(path)
    lines = [line.model_copy(update={"time": stamp}) if stamp else line
             for line in scan_text(str(text), source=path, rank=rank)]
    return FileResult(loaded=lines)


def _load_evidence_file(path: str, source: Source) -> FileResult:
    try:
        raw = source.read_all(MAX_EVIDENCE_FILE)
        if raw is None:
            raise ValueError(f"larger than {MAX_EVIDENCE_FILE >> 20} MiB")
        text = raw.decode("utf-8")
        if path.endswith(".jsonl"):
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text).get("evidence") or []
        return FileResult(loaded=parse_evidence(records))
    except Exception as exc:  # noqa: BLE001 - a bad evidence file is a skipped input
        return FileResult(skipped=[Skip(path, f"invalid evidence file: {str(exc)[:200]}")])


class LogProbe:
    """Reads logs, NCCL debug output, Slurm/kernel messages and evidence files."""

    name: ClassVar[str] = "logs"
    produces: ClassVar[frozenset[str]] = frozenset({"log_line", "collective_state", "process_group"}) | PRODUCES

    def __init__(self, signatures: SignatureSet | None = None, workers: int | None = None,
                 parsers: list[Any] | None = None) -> None:
        self.signatures = signatures or log_signatures()
        self.scanner = Scanner(self.signatures)
        self.workers = workers or os.cpu_count() or 1
        self.parsers = content_parsers() if parsers is None else parsers

    def applies_to(self, paths: Iterable[Path]) -> bool:
        return any(Path(p).exists() for p in paths)

    def collect(self, paths: Iterable[Path]) -> ProbeResult:
        """Read every file under ``paths`` once; bad input becomes a skipped entry, never an exception."""
        files, skips = walk(paths)
        out = ProbeResult(skipped=list(skips))
        names = [str(f) for f in files]
        loaded: list[Any] = []
        records: list[Any] = []
        parsed: list[Any] = []
        notes: list[str] = []
        sizes = [total_size((f,)) for f in files]  # one stat per file: the progress bar and the pool decision
        progress.begin(sum(sizes))
        for res, name, size in zip(self._read_all(names, sum(sizes)), names, sizes, strict=True):
            progress.advance(size)
            if res.scanned:
                out.scanned.append(name)
            loaded.extend(res.loaded)
            records.extend(res.records)
            parsed.extend(res.parsed)
            out.skipped.extend(res.skipped)
            notes.extend(res.notes)
        out.evidence.extend(loaded)
        out.evidence.extend(parse_evidence(records))
        out.evidence.extend(p for p in parsed if not isinstance(p, dict))  # content parsers: models or records
        out.evidence.extend(parse_evidence([p for p in parsed if isinstance(p, dict)]))
        out.notes.extend(_merge_notes(notes))
        return out

    def _read_all(self, names: list[str], total_bytes: int) -> Iterable[FileResult]:
        if self.workers > 1 and len(names) > 1 and (len(names) >= PARALLEL_FILES or total_bytes > PARALLEL_BYTES):
            import multiprocessing  # start-up: only big inputs pay for the pool

            global _WORKER_SCANNER, _WORKER_PARSERS, _DUMP_SLOT
            self.scanner.prepare()  # compile (or load) once in the parent; forked workers share it
            _WORKER_SCANNER, _WORKER_PARSERS = self.scanner, self.parsers
            ctx = multiprocessing.get_context("fork")
            _DUMP_SLOT = ctx.BoundedSemaphore(1)
            try:
                with ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as pool:
                    yield from pool.map(_scan_in_worker, names, chunksize=max(1, len(names) // (self.workers * 8)))
            finally:
                _DUMP_SLOT = None
        else:
            for path in names:
                yield read_one(path, self.scanner, self.parsers)


def _merge_notes(notes: list[str]) -> list[str]:
    """Per-file notes that say the same thing of several files become one note."""
    by_text: dict[str, list[str]] = {}
    order: list[str] = []
    for note in notes:
        path, sep, text = note.partition(": ")
        key = text if sep else note
        if key not in by_text:
            order.append(key)
        by_text.setdefault(key, []).append(path if sep else "")
    out = []
    for key in order:
        paths = by_text[key]
        if len(paths) > 2 and all(paths):
            out.append(f"{len(paths)} files (e.g. {paths[0]}): {key}")
        else:
            out.extend(f"{p}: {key}" if p else key for p in paths)
    return out


def _is_error_file(path: Path, head: bytes) -> bool:
    """A torchelastic error file: error.json, or JSON with the py_callstack that @record writes."""
    if path.suffix != ".json":
        return False
    head = head[:4096]
    return b'"message"' in head and (b'"py_callstack"' in head or path.name == "error.json")


def _is_evidence_file(path: Path, head: bytes) -> bool:
    """Evidence saved by the live probe (evidence.jsonl) or per-rank hook reports (rank-N.json)."""
    if path.name.endswith("evidence.jsonl"):
        return True
    return path.suffix == ".json" and path.name.startswith("rank-") and b'"diagnose.report/' in head[:4096]


def scan_text(text: str, source: str = "<text>", rank: int | None = None) -> list[LogLine]:
    """Scan an in-memory text (e.g. a formatted exception) with every signature."""
    scanner = Scanner(log_signatures())
    out = []
    for hit in scanner.scan_buffer(text.encode("utf-8", "replace")).hits:
        line_rank = rank_from_line(hit.text)
        out.append(LogLine(signature=hit.signature, fields=hit.fields, text=hit.text[:2000],
                           rank=line_rank if line_rank is not None else rank,
                           provenance=Provenance(probe="logs", source=source, line=hit.line_no)))
    return out


@lru_cache(maxsize=8)
def log_signatures(rule_dirs: tuple[str, ...] = ()) -> SignatureSet:
    """Signatures the log scan uses (step-time lines are parsed by the step-time probe instead), with
    those of each site rule folder's ``signatures/``."""
    extra = [Path(d) / "signatures" for d in rule_dirs if (Path(d) / "signatures").is_dir()]
    return SignatureSet(s for s in load_signatures(extra).signatures if s.component != "steptime")
