"""Artifacts a user pastes: launch commands and scripts, configs, system tool outputs, metric tables.

Each family module reads a `Source` (one file's text, split once) and returns typed evidence; the kind
of artifact is recognised by its content (``rules/artifacts/*.yaml``), never by the file name. The log
probe calls `records` from its single pass over each file.
"""

from __future__ import annotations

from typing import Any

from diagnose.evidence import dump_evidence
from diagnose.probes.artifacts import configs, launch, metrics, prose, system
from diagnose.probes.artifacts.source import Source

__all__ = ["parse", "records", "FAMILIES", "MAX_BYTES", "PRODUCES"]

FAMILIES = (launch, configs, system, metrics, prose)
MAX_BYTES = 4 << 20  # larger files are logs, not pasted artifacts: only their head is read
PRODUCES = frozenset({"launch_spec", "config_setting", "system_fact", "metric_series", "step_metric"})


def parse(path: str, text: str, rank: int | None = None) -> tuple[list[Any], list[str]]:
    """Evidence of every artifact family in ``text`` and notes on what could not be parsed."""
    src = Source(path, text[:MAX_BYTES], rank)
    out: list[Any] = []
    measured: set[int | None] = set()  # lines a table or keyed parser already read: prose does not read them again
    for fam in FAMILIES:
        try:
            got = fam.parse(src)
            if fam is prose:
                got = [e for e in got if e.provenance.line not in measured]
            measured.update(e.provenance.line for e in got if e.kind in ("step_metric", "metric_series"))
            out += got
        except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:  # bad input: note, go on
            src.notes.append(f"{path}: {fam.__name__.rsplit('.', 1)[-1]} not read: {str(exc)[:120]}")
    if len(text) > MAX_BYTES:
        src.notes.append(f"{path}: only the first {MAX_BYTES >> 20} MiB read for launch commands, configs and tables")
    return out, src.notes


def records(path: str, data: bytes | memoryview, rank: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """`parse` over raw bytes, as plain records (the log probe validates every record at once)."""
    text = bytes(data[:MAX_BYTES + 1]).decode("utf-8", "replace")
    found, notes = parse(path, text, rank)
    return dump_evidence(found), notes
