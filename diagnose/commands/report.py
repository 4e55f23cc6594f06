"""`diagnose report DIR`: merge the per-rank reports the hook wrote into one cross-rank diagnosis.

Unlike the rest of `diagnose.hook`, this runs on the command-line side and uses the engine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.engine import diagnose_evidence
from diagnose.errors import ConfigError
from diagnose.evidence import Provenance, RankStatus
from diagnose.hook.reportfile import parse_report_name
from diagnose.output.report import Report, Skipped
from diagnose.probes.live import merge
from diagnose.probes.logs.probe import scan_text
from diagnose.ranks import format_ranks

MAX_REPORT_BYTES = 64 * 2**20


def find_reports(directory: Path) -> list[tuple[int, int, Path]]:
    """(rank, attempt, path) of every per-rank report under `directory`, recursively; other files ignored."""
    found = []
    for path in sorted(directory.rglob("rank-*.json")):
        named = parse_report_name(path.name)
        if named and path.is_file():
            found.append((*named, path))
    return sorted(found)


def _load(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise ValueError(f"larger than {MAX_REPORT_BYTES} bytes")
    data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    if not isinstance(data, dict) or not isinstance(data.get("evidence"), list):
        raise ValueError("not a per-rank report (no evidence list)")
    return data


def _rescan(items: list[Any], rank: int, source: str) -> list[Any]:
    """Run the log signatures over exception texts the hook could not scan in-process."""
    if any(i.provenance.probe == "logs" for i in items):
        return []
    texts = [i.fields["traceback"] for i in items
             if i.kind == "log_line" and isinstance(i.fields.get("traceback"), str)]
    if not texts:
        return []

    return [hit for text in texts for hit in scan_text(text, source=source, rank=rank)]


def collect_reports(directory: Path) -> tuple[list[Any], list[Skipped], list[str]]:
    """Evidence of the latest attempt's per-rank reports, plus no_evidence for ranks without one."""
    if not directory.is_dir():
        raise ConfigError(f"{directory}: not a directory")
    found = find_reports(directory)
    skipped: list[Skipped] = []
    notes: list[str] = []
    if not found:
        return [], skipped, [f"no per-rank reports (rank-<R>.json) under {directory}"]
    latest = max(attempt for _, attempt, _ in found)
    older = sorted({a for _, a, _ in found if a != latest})
    if older:
        notes.append(f"attempt {latest} merged; earlier attempts {older} left out")
    bundles: dict[str, dict[str, Any]] = {}
    ranks: dict[str, int] = {}
    for rank, attempt, path in found:
        if attempt != latest or rank in ranks.values():
            continue
        try:
            data = _load(path)
        except (OSError, ValueError) as exc:
            skipped.append(Skipped(source=str(path), reason=str(exc)[:200]))
            continue
        declared = data["ranks"].get("world_size") if isinstance(data.get("ranks"), dict) else None
        bundles[str(path)], ranks[str(path)] = {"evidence": data["evidence"], "world_size": declared}, rank
    merged = merge.merge(bundles, ranks=ranks)
    skipped += merged.skipped
    evidence = merged.evidence
    for source, rank in ranks.items():
        items = [e for e in evidence if e.rank == rank]
        try:
            evidence += _rescan(items, rank, source)
        except Exception as exc:
            notes.append(f"{source}: log signatures not run: {type(exc).__name__}: {exc}")
    seen = set(ranks.values())
    world = merged.world_size
    quiet = [rank for rank in range(world or 0) if rank not in seen]
    for rank in quiet:
        evidence.append(RankStatus(rank=rank, status="no_evidence", detail=NO_REPORT,
                                   text=f"rank {rank} wrote no report under {directory} ({NO_REPORT})",
                                   provenance=Provenance(probe="hook-report", source=str(directory))))
    if quiet:
        notes.append(f"rank(s) {format_ranks(quiet)} wrote no report: the hook writes one only when its rank "
                     "raises or stalls, so they did not fail (they may have been stopped by the launcher)")
    return evidence, skipped, notes


NO_REPORT = "no hook report: the hook writes one only on an exception or a stall"


def run_report(directory: Path, rule_dirs: Sequence[Path] = ()) -> Report:
    """Merge the per-rank reports under `directory` and diagnose them across ranks (with site rules)."""
    evidence, skipped, notes = collect_reports(Path(directory))
    return diagnose_evidence(evidence, skipped=skipped, notes=notes, command="report", rule_dirs=rule_dirs)
