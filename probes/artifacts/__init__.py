"""Artifacts a user pastes: launch commands and scripts, configs, system tool outputs, metric tables.

Each family module reads a `Source` (one file's text, split once) and returns typed evidence; the kind
of artifact is recognised by its content (``rules/artifacts/*.yaml``), never by the file name. The log
probe calls `records` from its single pass over each file.
"""

from __future__ import annotations

from typing import Any, AnyStr

from diagnose.evidence import dump_evidence
from diagnose.probes.artifacts import (
    code_facts,
    configs,
    cues,
    launch,
    launch_code,
    mentions,
    metrics,
    prose,
    system,
    wording,
)
from diagnose.probes.artifacts.source import Source

__all__ = ["parse", "records", "pieces", "FAMILIES", "HEAD_BYTES", "TAIL_BYTES", "MAX_BYTES", "PRODUCES"]

FAMILIES = (launch, launch_code, code_facts, configs, system, metrics, prose, cues, mentions, wording)
HEAD_BYTES = 1 << 20   # a pasted artifact is read whole; of a longer file (a log) its head and its tail:
TAIL_BYTES = 256 << 10  # launch commands, env and configs are printed first, results tables last
MAX_BYTES = 8 << 20    # never more is decoded (the log probe's view is 8 MiB)
PRODUCES = frozenset({"launch_spec", "config_setting", "system_fact", "metric_series", "step_metric",
                      "inferred_symptom", "mention", "report_words", "code_fact"})


def pieces(buf: AnyStr) -> list[tuple[int, AnyStr]]:
    """(lines before it, piece) of what is read: all of ``buf`` when short, else its head and its tail, each
    cut at line ends; the middle of a long log is the log probe's (signatures, step lines), not an artifact."""
    nl = "\n" if isinstance(buf, str) else b"\n"
    if len(buf) <= HEAD_BYTES + TAIL_BYTES:
        return [(0, buf)]
    head_end = buf.rfind(nl, 0, HEAD_BYTES) + 1 or HEAD_BYTES
    tail_start = buf.find(nl, len(buf) - TAIL_BYTES) + 1 or len(buf)
    return [(0, buf[:head_end]), (buf.count(nl, 0, tail_start), buf[tail_start:])]


def parse(path: str, text: str, rank: int | None = None) -> tuple[list[Any], list[str]]:
    """Evidence of every artifact family in ``text`` (its head and tail when long) and notes on what could not be
    parsed."""
    return _parse_pieces(path, pieces(text[:MAX_BYTES]), rank, len(text) > MAX_BYTES)


def records(path: str, data: bytes | memoryview, rank: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """`parse` over raw bytes (only the pieces read are decoded), as plain records (the log probe validates every
    record at once)."""
    raw = data if isinstance(data, bytes) and len(data) <= MAX_BYTES else bytes(data[:MAX_BYTES])
    parts = [(offset, piece.decode("utf-8", "replace")) for offset, piece in pieces(raw)]
    found, notes = _parse_pieces(path, parts, rank, len(data) > MAX_BYTES)
    return dump_evidence(found), notes


def _parse_pieces(path: str, parts: list[tuple[int, str]], rank: int | None,
                  cut: bool) -> tuple[list[Any], list[str]]:
    out: list[Any] = []
    notes: list[str] = []
    for offset, piece in parts:
        src = Source(path, piece, rank, line_offset=offset)
        measured: set[int | None] = set()  # lines a table or keyed parser read: prose does not read them again
        for fam in FAMILIES:
            try:
                got = fam.parse(src)
                if fam is prose:
                    got = [e for e in got if e.provenance.line not in measured]
                measured.update(e.provenance.line for e in got if e.kind in ("step_metric", "metric_series"))
                out += got
            except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:  # bad input: note, go on
                src.notes.append(f"{path}: {fam.__name__.rsplit('.', 1)[-1]} not read: {str(exc)[:120]}")
        notes += src.notes
    if len(parts) > 1 or cut:
        notes.append(f"{path}: launch commands, configs and tables read from its first {HEAD_BYTES >> 20} MiB and "
                     f"last {TAIL_BYTES >> 10} KiB" + (f" of the first {MAX_BYTES >> 20} MiB" if cut else ""))
    return out, notes
