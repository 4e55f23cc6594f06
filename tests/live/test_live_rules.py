"""Run the fixtures of the live rules (rules/live/*.test.yaml) against each rule alone.

The generic rule-fixture plugin runs them too once it exists; this keeps the live rules
checked meanwhile, and validates them against the predicate vocabulary.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from diagnose.context import Context
from diagnose.engine import evaluate_rule
from diagnose.evidence import parse_evidence
from diagnose.probes.logs.signatures import SignatureSet
from diagnose.ruleset import validate
from diagnose.rulespec import load_rule_file
from diagnose.yamlload import builtin_rules_dir

LIVE = builtin_rules_dir() / "live"
RULES = sorted(p for p in LIVE.glob("*.yaml") if not p.name.endswith(".test.yaml"))


def _cases() -> list[tuple[Path, str, dict]]:
    out = []
    for rule in RULES:
        spec = yaml.safe_load(rule.with_name(rule.stem + ".test.yaml").read_text())
        assert spec["rule"] == rule.stem
        out += [(rule, name, case) for name, case in spec["cases"].items()]
    return out


CASES = _cases()


def test_live_rules_exist_and_validate() -> None:
    assert len(RULES) >= 9
    rules = [load_rule_file(p) for p in RULES]
    assert validate(rules, SignatureSet([])) == []


def test_every_outcome_has_a_firing_case_and_a_quiet_case() -> None:
    for rule_path in RULES:
        rule = load_rule_file(rule_path)
        cases = [c for r, _, c in CASES if r == rule_path]
        assert any(c["expect"] == "quiet" for c in cases), rule.id
        fired = {c["expect"].get("confidence", "") for c in cases if c["expect"] != "quiet"}
        assert len(fired) >= 1 and len(cases) >= 2, rule.id
        assert sum(c["expect"] != "quiet" for c in cases) >= len(rule.outcomes), rule.id


@pytest.mark.parametrize(("rule_path", "name", "case"), CASES, ids=[f"{r.stem}::{n}" for r, n, _ in CASES])
def test_fixture(rule_path: Path, name: str, case: dict) -> None:
    rule = load_rule_file(rule_path)
    finding = evaluate_rule(rule, Context(parse_evidence(case["evidence"])))
    expect = case["expect"]
    if expect == "quiet":
        assert finding is None, f"{name}: fired {finding and finding.cause}: {finding and finding.message}"
        return
    assert finding is not None, f"{name}: expected {expect['fires']}, rule stayed quiet"
    assert finding.cause == expect["fires"]
    if "ranks" in expect:
        assert sorted(finding.culprits) == expect["ranks"], finding.message
    if "confidence" in expect:
        assert finding.outcome.confidence == expect["confidence"]
    assert "?" not in finding.message.replace("?)", ""), finding.message
