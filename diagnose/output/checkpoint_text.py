"""The checkpoint part of the text report: what each file holds and lacks, and how two differ."""

from __future__ import annotations

from typing import Any


def _sections(checkpoint: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not checkpoint:
        return []
    return [checkpoint, *([checkpoint["other"]] if checkpoint.get("other") else [])]


def inventory_lines(checkpoint: dict[str, Any] | None) -> list[str]:
    """What each checkpoint holds and lacks, its problems, and the comparison of two."""
    out = []
    for sec in _sections(checkpoint):
        line = f"checkpoint {sec.get('path')}: {sec.get('format')}"
        if sec.get("world_size"):
            line += f", written by {sec['world_size']} ranks"
        out.append(line)
        if sec.get("present"):
            out.append(f"  holds: {', '.join(sec['present'])}")
        if sec.get("missing"):
            out.append(f"  lacks: {', '.join(sec['missing'])}")
        out += [f"  problem: {p}" for p in (sec.get("problems") or [])[:5]]
        out += [f"  note: {n}" for n in (sec.get("notes") or [])[:3]]
        if sec.get("error"):
            out.append(f"  unreadable: {sec['error']}")
    diff = (checkpoint or {}).get("mismatches")
    if diff:
        out.append(f"comparison: {diff.get('only_in_first_count', 0)} key(s) only in the first, "
                   f"{diff.get('only_in_second_count', 0)} only in the second, "
                   f"{diff.get('shape_count', 0)} shape and {diff.get('dtype_count', 0)} dtype mismatch(es)")
        out += [f"  only in the first: {k}" for k in (diff.get("only_in_first") or [])[:5]]
        out += [f"  only in the second: {k}" for k in (diff.get("only_in_second") or [])[:5]]
        out += [f"  shape {s['key']}: {s['first']} vs {s['second']}" for s in (diff.get("shape") or [])[:5]]
        out += [f"  {e}" for e in diff.get("explanation") or []]
    return out
