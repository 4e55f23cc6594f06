"""The per-rank report file of the hook: build it (with the engine when it imports), write it, summarise it.

Layout (CONTRACT.md, "Per-rank reports"): ``<dir>/rank-<R>.json`` and
``<dir>/rank-<R>.attempt-<A>.json`` for restarts; a report plus "rank", "attempt", "evidence".
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

SCHEMA = "diagnose.report/1"
PREFIX = "[diagnose]"


def parse_report_name(name: str) -> tuple[int, int] | None:
    """(rank, attempt) of a per-rank report's file name (``rank-<R>.json``, ``rank-<R>.attempt-<A>.json``)."""
    if not (name.startswith("rank-") and name.endswith(".json")):
        return None
    rank, sep, attempt = name[len("rank-"):-len(".json")].partition(".attempt-")
    if not rank.isdecimal() or (sep and not attempt.isdecimal()):
        return None
    return int(rank), int(attempt or 0)


def report_path(directory: Path, rank: int, attempt: int) -> Path:
    """Where the report of one rank and attempt goes."""
    name = f"rank-{rank}.json" if not attempt else f"rank-{rank}.attempt-{attempt}.json"
    return directory / name


def _scan(evidence: list[dict[str, Any]], rank: int | None) -> tuple[list[dict[str, Any]], str | None]:
    """Run the log signatures over the exception text, as `diagnose logs` would."""
    texts = [e["fields"]["traceback"] for e in evidence
             if e.get("kind") == "log_line" and "traceback" in e.get("fields", {})]
    if not texts:
        return [], None
    try:
        # start-up: the hook imports only the standard library
        from diagnose.evidence import dump_evidence
        from diagnose.probes.logs.probe import scan_text

        found = [item for text in texts for item in scan_text(text, source="exception", rank=rank)]
        return dump_evidence(found), None
    except Exception as exc:  # the signatures or their dependencies are unavailable
        return [], f"log signatures not run in-process: {type(exc).__name__}: {exc}"


def build_report(evidence: list[dict[str, Any]], meta: dict[str, Any], use_engine: bool = True) -> dict[str, Any]:
    """The report dict; the in-process diagnosis when the engine imports, else the evidence alone."""
    notes = list(meta.get("notes", []))
    if use_engine:
        scanned, note = _scan(evidence, meta["rank"])
        if note:
            notes.append(note)
        try:
            # start-up: the hook imports only the standard library
            from diagnose.engine import diagnose_evidence
            from diagnose.evidence import parse_evidence

            report = diagnose_evidence(parse_evidence(evidence + scanned), command="hook", notes=notes)
            data = report.to_json_dict()
            data.update(rank=meta["rank"], attempt=meta["attempt"], evidence=evidence + scanned)
            return data
        except Exception as exc:
            notes.append(f"in-process diagnosis unavailable: {type(exc).__name__}: {exc}")
    world = meta.get("world_size")
    return {"schema": SCHEMA, "command": "hook", "symptom": None, "causes": [],
            "ranks": {"world_size": world, "seen": [meta["rank"]], "missing": []},
            "skipped": [], "next": [f"merge the ranks: diagnose report {meta.get('directory', '.')}"],
            "notes": notes, "rank_states": [], "timeline": [],
            "rank": meta["rank"], "attempt": meta["attempt"], "evidence": evidence}


def write_report(path: Path, data: dict[str, Any]) -> Path:
    """Write atomically (temporary file + rename), so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".rank-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, default=str)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def summary_lines(data: dict[str, Any], headline: str, path: Path | None) -> list[str]:
    """A few `[diagnose]` lines for stderr: what happened, the top cause, the first fix, the file."""
    lines = [f"{PREFIX} rank {data.get('rank')}: {headline}"]
    causes = data.get("causes") or []
    if causes:
        top = causes[0]
        ranks = f" ranks {top['ranks']}" if top.get("ranks") else ""
        lines.append(f"{PREFIX} likely cause: {top['id']} ({top.get('confidence')}{ranks}): {top.get('summary', '')}")
        if top.get("fix"):
            lines.append(f"{PREFIX} first fix: {top['fix']}")
    else:
        lines.append(f"{PREFIX} no cause decided from this rank alone; merge all ranks with `diagnose report`")
    if path is not None:
        lines.append(f"{PREFIX} report: {path}")
    return [line.replace("\n", " ")[:400] for line in lines]
