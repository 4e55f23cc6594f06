"""The held-out corpora (tests/heldout, tests/heldout2 ... tests/heldout7) are labelled with the
contract's ids only: every case.json has the fields of the held-out layout, names one symptom and
causes from shared/corpus/CAUSES.md (mirrored in diagnose.vocab), cites a source as owner/repo#N,
and has a non-empty input folder. A label typo would silently count as a miss in every score."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from diagnose.vocab import CAUSES, SYMPTOMS

TESTS = Path(__file__).resolve().parents[1]
KIND_SINCE = 4  # tests/heldout4 and every later corpus label each case's "kind"; older ones predate that field
REQUIRED = ("heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8")
KINDS = {"log", "metrics", "system", "config", "command", "script", "prose", "single_process"}
SOURCE = re.compile(r"^[\w.-]+/[\w.-]+#\d+$|^https?://\S+$")
CASES = sorted(p.parent for p in TESTS.glob("heldout*/*/case.json"))


def _carries_kind(corpus: str) -> bool:
    number = corpus.removeprefix("heldout")
    return number.isdigit() and int(number) >= KIND_SINCE


def test_the_held_out_corpora_are_there() -> None:
    present = {c.parent.name for c in CASES}
    assert present >= set(REQUIRED), present
    assert all(sum(c.parent.name == name for c in CASES) >= 40
               for name in ("heldout5", "heldout6", "heldout7", "heldout8"))


@pytest.mark.parametrize("case_dir", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_case_is_labelled_with_contract_ids(case_dir: Path) -> None:
    case = json.loads((case_dir / "case.json").read_text())
    assert case["id"] == case_dir.name
    assert SOURCE.match(case["source"]), case["source"]
    assert case["symptom"] in SYMPTOMS, case["symptom"]
    assert case["causes"], "a case names at least one cause"
    for cause in [*case["causes"], *case.get("acceptable", [])]:
        assert cause in CAUSES, cause
    assert not set(case["causes"]) & set(case.get("acceptable", [])), (
        "a cause is either expected or acceptable"
    )
    assert case.get("rationale", "").strip(), "the rationale says how the cause was established"
    if _carries_kind(case_dir.parent.name):
        assert case["kind"] in KINDS, case.get("kind")
    inputs = [p for p in (case_dir / "input").rglob("*") if p.is_file()]
    assert inputs and all(p.stat().st_size > 0 for p in inputs), "input/ holds what the user pasted"


def test_sources_are_not_reused_across_corpora() -> None:
    seen: dict[str, str] = {}
    for case_dir in CASES:
        source = json.loads((case_dir / "case.json").read_text())["source"].lower()
        where = f"{case_dir.parent.name}/{case_dir.name}"
        assert source not in seen, f"{source} is in {seen.get(source)} and {where}"
        seen[source] = where


def test_vocab_mirrors_the_contract() -> None:
    contract = TESTS.parents[1] / "shared" / "corpus" / "CAUSES.md"
    if not contract.exists():
        pytest.skip("shared/corpus/CAUSES.md is not beside this checkout")
    ids = set(re.findall(r"^\| `([a-z_]+)` \|", contract.read_text(), re.M))
    assert ids == set(CAUSES) | set(SYMPTOMS)
