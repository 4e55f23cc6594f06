"""Rule fixture cases: evaluate one rule alone on typed evidence and compare with ``expect``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class CaseResult:
    ok: bool
    detail: str


def run_case(rule_id: str, case: dict[str, Any], rule: Any = None) -> CaseResult:
    """Evaluate one rule alone on a fixture's typed evidence and compare with ``expect``."""
    # start-up: the pytest plugin (authoring.testing) loads this module in every pytest run
    from pydantic import ValidationError  # start-up: see above

    # start-up: as above
    from diagnose.analyzers import crossrank
    from diagnose.context import Context
    from diagnose.engine import evaluate_rule
    from diagnose.evidence import parse_evidence

    rule = rule or _ruleset().by_id[rule_id]
    try:
        evidence = parse_evidence(case.get("evidence") or [])
    except ValidationError as exc:  # a malformed fixture is a failed case with its reason, not a crash
        err = exc.errors()[0]
        return CaseResult(False, f"fixture evidence does not validate: {'.'.join(map(str, err['loc']))}: {err['msg']}")
    evidence += crossrank.derive(evidence)
    finding = evaluate_rule(rule, Context(evidence))
    expect = case.get("expect")
    if expect == "quiet":
        return CaseResult(finding is None, f"expected quiet, got {finding.cause if finding else None}"
                          + (f": {finding.message}" if finding else ""))
    if finding is None:
        return CaseResult(False, f"expected {expect}, the rule did not fire")
    got = {"fires": finding.cause, "ranks": sorted(finding.culprits), "symptom": finding.symptom}
    ok = (finding.cause == expect.get("fires") and ("ranks" not in expect or sorted(expect["ranks"]) == got["ranks"])
          and expect.get("symptom", finding.symptom) == finding.symptom)
    return CaseResult(ok, f"expected {expect}, got {got}; message: {finding.message}")


_CACHE: dict[str, Any] = {}


def _ruleset() -> Any:
    if "rs" not in _CACHE:
        from diagnose.ruleset import load_ruleset  # start-up: see run_case

        _CACHE["rs"] = load_ruleset()
    return _CACHE["rs"]
