"""Shared helpers of the artifact tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnose.probes.artifacts import parse

FIXTURES = Path(__file__).parent / "fixtures"


def parsed(rel: str, kind: str | None = None) -> list[Any]:
    """Evidence of one fixture file (optionally of one kind)."""
    path = FIXTURES / rel
    found, _ = parse(str(path), path.read_text(encoding="utf-8"))
    return [e for e in found if kind is None or e.kind == kind]


def facts(rel: str) -> dict[str, Any]:
    """System facts of a fixture by name (first value)."""
    out: dict[str, Any] = {}
    for f in parsed(rel, "system_fact"):
        out.setdefault(f.name, f.value)
    return out
