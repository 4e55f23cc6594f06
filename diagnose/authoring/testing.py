"""Rule fixtures as tests: a pytest plugin collecting rules/**/*.test.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from diagnose.authoring.fixtures import run_case


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
