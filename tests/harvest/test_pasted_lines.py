"""Regression guard for the harvested sample of pasted lines (tests/harvest/pasted_lines.jsonl).

The sample holds error lines users pasted into public issue threads about failed distributed PyTorch runs (one
record per line: the thread it came from, the line, and the emitting source where a signature recognises it). A line
marked ``expect`` was unrecognised before harvest 7 and is read by a signature written from its emitting project's
source; it must stay recognised by that signature. Every thread is scanned as one pasted text, as a user pastes it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from diagnose.probes.logs.probe import scan_text
from diagnose.ruleset import load_ruleset

SAMPLE = Path(__file__).with_name("pasted_lines.jsonl")
RECORDS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
# Signatures that only say "an exception / a frame / a version", not what failed.
GENERIC = frozenset(
    {
        "python_exception",
        "python_exception_repr",
        "python_exception_type_last",
        "python_exception_notebook",
        "python_frame",
        "python_thread_dump_header",
        "nccl_version",
        "nccl_version_banner",
        "torch_version",
        "elastic_child_failed_error",
    }
)


def _scan() -> dict[int, set[str]]:
    """Signatures found on each record's line, each thread scanned as one text."""
    by_thread: dict[str, list[int]] = defaultdict(list)
    for i, rec in enumerate(RECORDS):
        by_thread[rec["thread"]].append(i)
    found: dict[int, set[str]] = defaultdict(set)
    for thread, idx in by_thread.items():
        text = "".join(RECORDS[i]["line"] + "\n" for i in idx)
        for ev in scan_text(text, source=thread):
            found[idx[ev.provenance.line - 1]].add(ev.signature)
    return found


FOUND = _scan()
COVERED = [(i, rec["expect"]) for i, rec in enumerate(RECORDS) if "expect" in rec]


def test_sample_is_broad() -> None:
    threads = {rec["thread"] for rec in RECORDS}
    assert len(threads) >= 150, len(threads)
    assert len(COVERED) >= 25, len(COVERED)


@pytest.mark.parametrize(
    ("index", "signature"), COVERED, ids=[f"{RECORDS[i]['thread']}:{s}" for i, s in COVERED]
)
def test_covered_line_is_read_by_its_signature(index: int, signature: str) -> None:
    assert signature in FOUND[index], f"{RECORDS[index]['line']!r} -> {sorted(FOUND[index])}"


def test_share_recognised_specifically_does_not_drop() -> None:
    specific = [i for i in range(len(RECORDS)) if FOUND[i] - GENERIC]
    assert len(specific) / len(RECORDS) >= 0.85, f"{len(specific)} of {len(RECORDS)}"


def test_share_mapped_to_a_cause_does_not_drop() -> None:
    named = {
        n
        for rule in load_ruleset().rules
        for call in rule.match
        if call.predicate == "has_signature"
        for n in call.params.get("names", ())
    }
    mapped = [i for i in range(len(RECORDS)) if (FOUND[i] - GENERIC) & named]
    assert len(mapped) / len(RECORDS) >= 0.70, f"{len(mapped)} of {len(RECORDS)}"
