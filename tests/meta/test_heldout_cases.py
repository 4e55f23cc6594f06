"""The held-out corpora (tests/heldout*) keep the labelling contract of shared/corpus/CAUSES.md: every case has
the corpus fields, a symptom and causes from the vocabulary (diagnose.vocab mirrors CAUSES.md), a source that
names a public thread, and an input folder with something in it. A label outside the vocabulary would make the
scorer count the case as unwinnable without anyone noticing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from diagnose.vocab import CAUSES, SYMPTOMS

TESTS = Path(__file__).resolve().parents[1]
CASES = sorted(TESTS.glob("heldout*/*/case.json"))
FIELDS = {"id", "source", "symptom", "causes", "acceptable", "rationale"}
KINDS = {"log", "single_process", "metrics", "system", "config", "command", "script"}
SOURCE = re.compile(r"^[\w.-]+/[\w.-]+#\d+$|^https?://\S+$")


def test_every_heldout_corpus_has_cases() -> None:
    corpora = {c.parent.parent.name for c in CASES}
    assert {"heldout4", "heldout5"} <= corpora
    assert len([c for c in CASES if c.parent.parent.name == "heldout5"]) >= 40


@pytest.mark.parametrize("path", CASES, ids=[f"{c.parent.parent.name}/{c.parent.name}" for c in CASES])
def test_case_labels(path: Path) -> None:
    case = json.loads(path.read_text())
    assert set(case) >= FIELDS, f"missing {FIELDS - set(case)}"
    assert case["id"] == path.parent.name
    assert SOURCE.match(case["source"]), case["source"]
    assert case["symptom"] in SYMPTOMS, case["symptom"]
    assert case["causes"], "a case names at least its primary cause"
    for cause in [*case["causes"], *case["acceptable"]]:
        assert cause in CAUSES, cause
    assert not set(case["causes"]) & set(case["acceptable"])
    if "kind" in case:
        assert case["kind"] in KINDS, case["kind"]
    assert case["rationale"].strip()
    inputs = [p for p in (path.parent / "input").glob("*") if p.is_file()]
    assert inputs and all(p.stat().st_size for p in inputs)


def test_heldout5_sources_are_unique() -> None:
    sources = [json.loads(c.read_text())["source"] for c in CASES if c.parent.parent.name == "heldout5"]
    assert len(sources) == len(set(sources))
