"""The evidence bundle: evidence records, skipped sources and notes, the one form live evidence travels in.

What `hang --save` writes (``evidence.jsonl``, ``skipped.jsonl``, ``notes.txt``) and what a node
returns in the Slurm fan-out (``hang --local``: the same three as one JSON object on stdout), so the
engine runs once, in the parent, on the merged bundles. Standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = "diagnose.bundle/1"


def to_json(evidence: list[dict[str, Any]], skipped: list[dict[str, Any]], notes: list[str]) -> str:
    """One bundle as a single JSON object (the fan-out's stdout), indented: srun --label splits long lines."""
    return json.dumps({"schema": SCHEMA, "evidence": evidence, "skipped": skipped, "notes": notes},
                      sort_keys=True, default=str, indent=1)


def from_json(text: str) -> dict[str, Any]:
    """A bundle read back; ValueError when the text is not one."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("evidence"), list):
        raise ValueError("not an evidence bundle")
    return {"evidence": data["evidence"], "skipped": list(data.get("skipped") or []),
            "notes": [str(n) for n in data.get("notes") or []]}


def write(directory: Path, evidence: list[dict[str, Any]], skipped: list[dict[str, Any]], notes: list[str]) -> None:
    """The bundle as files of a folder: evidence.jsonl, skipped.jsonl, notes.txt."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "evidence.jsonl", "w", encoding="utf-8") as fh:
        for record in evidence:
            fh.write(json.dumps(record, sort_keys=True, default=str) + "\n")
    with open(directory / "skipped.jsonl", "w", encoding="utf-8") as fh:
        for record in skipped:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
    (directory / "notes.txt").write_text("".join(n.replace("\n", " ") + "\n" for n in notes), encoding="utf-8")


def read(directory: Path) -> dict[str, Any]:
    """A saved bundle read back from its folder."""
    lines = (directory / "evidence.jsonl").read_text(encoding="utf-8").splitlines()
    skipped = directory / "skipped.jsonl"
    notes = directory / "notes.txt"
    return {"evidence": [json.loads(line) for line in lines if line.strip()],
            "skipped": [json.loads(line) for line in skipped.read_text(encoding="utf-8").splitlines()
                        if line.strip()] if skipped.is_file() else [],
            "notes": notes.read_text(encoding="utf-8").splitlines() if notes.is_file() else []}
