"""Rule fixtures as tests: a pytest plugin collecting rules/**/*.test.yaml, and the shared case runner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml


@dataclass
class CaseResult:
    ok: bool
    detail: str


def run_case(rule_id: str, case: dict[str, Any]) -> CaseResult:
    """Evaluate one rule alone on a fixture's typed evidence and compare with ``expect``."""
    from diagnose.analyzers import crossrank
    from diagnose.context import Context
    from diagnose.engine import evaluate_rule
    from diagnose.evidence import parse_evidence

    rule = _ruleset().by_id[rule_id]
    evidence = parse_evidence(case.get("evidence") or [])
    evidence += crossrank.derive(evidence)
    finding = evaluate_rule(rule, Context(evidence))
    expect = case.get("expect")
    if expect == "quiet":
        return CaseResult(finding is None, f"expected quiet, got {finding.cause if finding else None}"
                          + (f": {finding.message}" if finding else ""))
    if finding is None:
        return CaseResult(False, f"expected {expect}, the rule did not fire")
    got = {"fires": finding.cause, "ranks": sorted(finding.culprits)}
    ok = finding.cause == expect.get("fires") and ("ranks" not in expect or sorted(expect["ranks"]) == got["ranks"])
    return CaseResult(ok, f"expected {expect}, got {got}; message: {finding.message}")


_CACHE: dict[str, Any] = {}


def _ruleset() -> Any:
    if "rs" not in _CACHE:
        from diagnose.ruleset import load_ruleset

        _CACHE["rs"] = load_ruleset()
    return _CACHE["rs"]


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.name.endswith(".test.yaml"):
        return RuleFixtureFile.from_parent(parent, path=file_path)
    return None


class RuleFixtureFile(pytest.File):
    def collect(self):  # noqa: ANN201
        doc = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        cases = doc.get("cases") or {}
        if not cases:
            raise ValueError(f"{self.path}: no cases")
        for name, case in cases.items():
            item = RuleFixtureItem.from_parent(self, name=name, rule_id=doc["rule"], case=case)
            if case.get("todo"):
                item.add_marker(pytest.mark.xfail(reason=case["todo"], strict=True))
            yield item


class RuleFixtureItem(pytest.Item):
    def __init__(self, *, rule_id: str, case: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rule_id = rule_id
        self.case = case

    def runtest(self) -> None:
        result = run_case(self.rule_id, self.case)
        if not result.ok:
            raise RuleFixtureFailure(result.detail)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, RuleFixtureFailure):
            return f"rule {self.rule_id}, case {self.name}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.rule_id}::{self.name}"


class RuleFixtureFailure(Exception):
    """A rule fixture's expectation did not hold."""
