"""The rule set is valid, every rule ships fixtures, the generated docs are fresh."""

import io
from pathlib import Path

from diagnose.authoring.docgen import render_docs
from diagnose.ruleset import load_ruleset, runbook_rows

ROOT = Path(__file__).resolve().parents[2]


def test_rules_check_passes():
    from diagnose.commands.rules import run_rules

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


def _rules_check(site: Path) -> tuple[int, str]:
    """``diagnose rules check --rules SITE`` in-process: its exit code and what it printed."""
    import contextlib

    from diagnose.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["rules", "check", "--rules", str(site)])
    return code, out.getvalue()


def test_malformed_rule_is_located_not_a_traceback(tmp_path):
    bad = tmp_path / "hang"
    bad.mkdir()
    (bad / "broken-rule.yaml").write_text("id: broken-rule\ntitle: x\nsymptoms: [hang_mid_run]\n"
                                          "requires: [log_line]\nmatch:\n  - no_such_predicate: {}\n"
                                          "outcomes: [{cause: nonsense, confidence: high, message: '{x.y}'}]\n"
                                          "explain: {why: 'long enough text here'}\nfix: f\nnext_steps: [a]\n")
    code, text = _rules_check(tmp_path)
    assert code == 2
    assert "broken-rule.yaml:1" in text and "unknown predicate 'no_such_predicate'" in text
    assert "unknown cause 'nonsense'" in text and "placeholder {x.y}" in text


def test_every_parameter_that_lists_signatures_is_checked(tmp_path):
    """``names`` and ``unless_reported`` name signatures: an unknown one is a located error; a name the
    code emits itself (EMITS_SIGNATURES, e.g. the hook's ``hook_exception``) is known."""
    rule = tmp_path / "hang"
    rule.mkdir()
    (rule / "quiet-rank.yaml").write_text(
        "id: quiet-rank\ntitle: A rank ended without a word\nstatus: stable\nsymptoms: [hang_mid_run]\n"
        "runbook: [H.scaling.occasional-hangs]\nrequires: [rank_status]\nmatch:\n"
        "- rank_exited: {signals: [SIGTERM], unless_reported: [hook_exception, no_such_signature]}\n  as: gone\n"
        "outcomes: [{cause: rank_failure, confidence: low, culprits: gone, message: 'rank {gone.ranks} ended'}]\n"
        "explain: {why: 'a rank that ends without a traceback leaves its peers waiting'}\nfix: f\nnext_steps: [a]\n")
    code, text = _rules_check(tmp_path)
    assert code == 2 and "quiet-rank.yaml:1" in text
    assert "unless_reported: unknown signature 'no_such_signature'" in text
    assert "hook_exception" not in text


def test_modules_stay_small():
    for path in list((ROOT / "diagnose").rglob("*.py")) + list((ROOT / "probes").rglob("*.py")):
        assert len(path.read_text().splitlines()) <= 500, path


SITE_RULE = """\
id: site-known-bad-switch
title: Our cluster's known flaky switch port
status: stable
symptoms: [hang_mid_run]
requires: [log_line]
match:
- has_signature: {names: [nccl_ib_completion_error]}
  as: ib
outcomes:
- cause: hardware_fault
  confidence: high
  culprits: ib
  message: rank(s) {ib.ranks} hit the known flaky port
explain: {why: 'Completion errors on our fabric have always been the same bad switch port.'}
fix: Drain the node and open a ticket with the network team.
next_steps: [Check the port counters.]
"""


def test_site_rules_from_env_are_loaded_and_used(tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    site = tmp_path / "site-rules"
    (site / "hang").mkdir(parents=True)
    (site / "hang" / "site-known-bad-switch.yaml").write_text(SITE_RULE)
    log = tmp_path / "rank3.log"
    log.write_text("node9:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0\n")
    env = {"DIAGNOSE_RULES": str(site), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(log), "--json"], capture_output=True,
                         text=True, env=env, check=True).stdout
    causes = json.loads(out)["causes"]
    site_cause = next(c for c in causes if "site-known-bad-switch" in c["rules"])
    assert site_cause["id"] == "hardware_fault" and site_cause["ranks"] == [3]
    listing = subprocess.run([sys.executable, "-m", "diagnose", "rules", "list"], capture_output=True, text=True,
                             env=env, check=True).stdout
    assert "site-known-bad-switch" in listing


def test_rules_show_prints_the_rule_file():
    from diagnose.commands.rules import run_rules

    out = io.StringIO()
    assert run_rules("show", "rank-killed-while-peers-waited", [], ROOT / "docs", out) == 0
    assert "id: rank-killed-while-peers-waited" in out.getvalue()


def test_new_rule_scaffold_passes_check(tmp_path):
    import subprocess
    import sys

    subprocess.run([sys.executable, str(ROOT / "scripts" / "new_rule.py"), "crash", "my-site-pattern",
                    "--rules", str(tmp_path)], check=True, capture_output=True)
    from diagnose.commands.rules import run_rules

    out = io.StringIO()
    assert run_rules("check", None, [tmp_path], ROOT / "docs", out) == 0, out.getvalue()
    assert "fixture cases: OK" in out.getvalue()
