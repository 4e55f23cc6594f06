"""The rule set is valid, every rule ships fixtures, the generated docs are fresh."""

import io
from pathlib import Path

from diagnose.docgen import render_docs
from diagnose.ruleset import load_ruleset, runbook_rows

ROOT = Path(__file__).resolve().parents[2]


def test_rules_check_passes():
    from diagnose.rulecli import run_rules

    out = io.StringIO()
    assert run_rules("check", None, [], ROOT / "docs", out) == 0, out.getvalue()


def test_every_symptom_table_row_is_cited():
    ruleset = load_ruleset()
    cited = {row for r in ruleset.rules for row in r.runbook}
    symptom_rows = {r for r, kind in runbook_rows().items() if kind == "symptom"}
    assert symptom_rows - cited == set()


def test_generated_docs_are_fresh():
    for rel, text in render_docs(load_ruleset()).items():
        path = ROOT / "docs" / rel
        assert path.exists() and path.read_text(encoding="utf-8") == text, f"{rel} is stale: run `diagnose rules docs`"


def test_malformed_rule_is_located_not_a_traceback(tmp_path):
    bad = tmp_path / "hang"
    bad.mkdir()
    (bad / "broken-rule.yaml").write_text("id: broken-rule\ntitle: x\nsymptoms: [hang_mid_run]\n"
                                          "requires: [log_line]\nmatch:\n  - no_such_predicate: {}\n"
                                          "outcomes: [{cause: nonsense, confidence: high, message: '{x.y}'}]\n"
                                          "explain: {why: 'long enough text here'}\nfix: f\nnext_steps: [a]\n")
    import contextlib

    from diagnose.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(err):
        code = main(["rules", "check", "--rules", str(tmp_path)])
    text = err.getvalue()
    assert code == 2
    assert "broken-rule.yaml:1" in text and "unknown predicate 'no_such_predicate'" in text
    assert "unknown cause 'nonsense'" in text and "placeholder {x.y}" in text


def test_modules_stay_small():
    for path in list((ROOT / "diagnose").rglob("*.py")) + list((ROOT / "probes").rglob("*.py")):
        assert len(path.read_text().splitlines()) <= 500, path
