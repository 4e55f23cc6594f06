"""The log probe: turns the files a run left behind into LogLine evidence.

Files are scanned in parallel for every signature at once; fields are extracted
on hit lines only. Ranks come from line prefixes (``[rank3]:``), launcher prefixes,
file names, and what the line itself says. Evidence files written by the live probe
or the library hook (``*.jsonl`` evidence, per-rank report JSON) are loaded as they are.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from diagnose.evidence import LogLine, Provenance, parse_evidence
from diagnose.probes import artifacts
from diagnose.probes.files import OpenedBuffer, Skip, open_buffer, total_size, walk
from diagnose.probes.logs import flight_recorder
from diagnose.probes.logs.scanner import Scanner
from diagnose.probes.logs.signatures import SignatureSet, load_signatures
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

PARALLEL_BYTES = 48 << 20  # below this, a process pool costs more than it saves


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


_WORKER_SCANNER: Scanner | None = None  # set before forking: workers inherit the compiled database


def _scan_in_worker(path: str) -> tuple[list[dict[str, Any]], list[Skip], list[str]]:
    if _WORKER_SCANNER is None:
        raise RuntimeError("scan worker started without a scanner")
    return _scan_one(path, _WORKER_SCANNER)


def _scan_one(path: str, scanner: Scanner) -> tuple[list[dict[str, Any]], list[Skip], list[str]]:
    opened = open_buffer(Path(path))
    if isinstance(opened, Skip):
        return [], [opened], []
    try:
        return _records(path, scanner, opened)
    finally:
        opened.close()


def _records(path: str, scanner: Scanner, opened: OpenedBuffer) -> tuple[list[dict[str, Any]], list[Skip], list[str]]:
    result = scanner.scan_buffer(opened.data)
    file_rank = rank_from_path(path)
    records = []
    for hit in result.hits:
        rank = rank_from_line(hit.text)
        fields = dict(hit.fields)
        if rank is None:
            rank = fields.get("rank") if isinstance(fields.get("rank"), int) else file_rank
        records.append({
            "kind": "log_line", "signature": hit.signature, "rank": rank, "fields": fields,
            "text": hit.text[:2000], "provenance": {"probe": "logs", "source": path, "line": hit.line_no},
            "time": time_from_line(hit.text),
        })
    notes = [f"{path}: {opened.note}"] if opened.note else []
    notes += [f"{path}: {n} more '{sig}' lines not kept" for sig, n in result.dropped.items()]
    found, artifact_notes = artifacts.records(path, opened.data, file_rank)  # launch/config/system/metric artifacts
    return records + found, [], notes + artifact_notes


class LogProbe:
    """Reads logs, NCCL debug output, Slurm/kernel messages and evidence files."""

    name: ClassVar[str] = "logs"
    produces: ClassVar[frozenset[str]] = frozenset({"log_line", "collective_state", "process_group"}) | artifacts.PRODUCES

    def __init__(self, signatures: SignatureSet | None = None, workers: int | None = None) -> None:
        self.signatures = signatures or log_signatures()
        self.scanner = Scanner(self.signatures)
        self.workers = workers or os.cpu_count() or 1

    def applies_to(self, paths: Iterable[Path]) -> bool:
        return any(Path(p).exists() for p in paths)

    def collect(self, paths: Iterable[Path]) -> ProbeResult:
        """Scan every file under ``paths``; bad input becomes a skipped entry, never an exception."""
        files, skips = walk(paths)
        out = ProbeResult(skipped=list(skips))
        logs = []
        for f in files:
            if _is_evidence_file(f):
                self._load_evidence_file(f, out)
            elif _is_error_file(f):
                self._load_error_file(f, out)
            elif flight_recorder.looks_like_dump(f):
                self._load_dump(f, out)
            else:
                logs.append(str(f))
        records: list[dict[str, Any]] = []
        for (recs, skipped, notes), name in zip(self._scan_all(logs), logs, strict=True):
            if not skipped:
                out.scanned.append(name)
            records.extend(recs)
            out.skipped.extend(skipped)
            out.notes.extend(notes)
        out.evidence.extend(parse_evidence(records))
        return out

    def _scan_all(self, logs: list[str]) -> Iterable[tuple[list[dict[str, Any]], list[Skip], list[str]]]:
        if self.workers > 1 and len(logs) > 1 and total_size(Path(p) for p in logs) > PARALLEL_BYTES:
            import multiprocessing

            global _WORKER_SCANNER
            self.scanner.prepare()  # compile (or load) once in the parent; forked workers share it
            _WORKER_SCANNER = self.scanner
            ctx = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as pool:
                yield from pool.map(_scan_in_worker, logs, chunksize=max(1, len(logs) // (self.workers * 8)))
        else:
            for path in logs:
                yield _scan_one(path, self.scanner)

    def _load_dump(self, path: Path, out: ProbeResult) -> None:
        dump = flight_recorder.read_dump(path)
        if isinstance(dump, Skip):
            out.skipped.append(dump)
        else:
            out.evidence.extend(flight_recorder.dump_evidence(dump, str(path), rank_from_path(str(path))))

    def _load_error_file(self, path: Path, out: ProbeResult) -> None:
        """A torchelastic error file (@record): the failed rank's message and full traceback."""
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            message = data["message"]
            if isinstance(message, str):
                text, stamp = message, None
            else:
                extra = message.get("extraInfo") or {}
                text = f"{extra.get('py_callstack') or ''}\n{message.get('message') or ''}"
                stamp = float(extra["timestamp"]) if str(extra.get("timestamp", "")).isdigit() else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            out.skipped.append(Skip(str(path), f"invalid torchelastic error file: {str(exc)[:120]}"))
            return
        rank = rank_from_path(str(path))
        for line in scan_text(text, source=str(path), rank=rank):
            out.evidence.append(line.model_copy(update={"time": stamp}) if stamp else line)

    def _load_evidence_file(self, path: Path, out: ProbeResult) -> None:
        try:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".jsonl":
                records = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                records = json.loads(text).get("evidence") or []
            out.evidence.extend(parse_evidence(records))
        except Exception as exc:  # noqa: BLE001 - a bad evidence file is a skipped input
            out.skipped.append(Skip(str(path), f"invalid evidence file: {str(exc)[:200]}"))


def _is_error_file(path: Path) -> bool:
    """A torchelastic error file: error.json, or JSON with the py_callstack that @record writes."""
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'"message"' in head and (b'"py_callstack"' in head or path.name == "error.json")


def _is_evidence_file(path: Path) -> bool:
    """Evidence saved by the live probe (evidence.jsonl) or per-rank hook reports (rank-N.json)."""
    if path.name.endswith("evidence.jsonl"):
        return True
    if path.suffix == ".json" and path.name.startswith("rank-"):
        try:
            with path.open("rb") as fh:
                return b'"diagnose.report/' in fh.read(4096)
        except OSError:
            return False
    return False


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


@lru_cache(maxsize=4)
def log_signatures(rule_dirs: tuple[str, ...] = ()) -> SignatureSet:
    """Signatures the log scan uses (step-time lines are parsed by the step-time probe instead), with
    those of each site rule folder's ``signatures/``."""
    extra = [Path(d) / "signatures" for d in rule_dirs if (Path(d) / "signatures").is_dir()]
    return SignatureSet(s for s in load_signatures(extra).signatures if s.component != "steptime")
