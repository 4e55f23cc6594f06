"""The checkpoint reader's file-name and key patterns, loaded from rules/tables/checkpoint_patterns.yaml.

Each pattern carries names it must match and near misses it must not; loading checks both, so a
broken edit to the table fails at start, with the pattern's name.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from diagnose.yamlload import builtin_rules_dir


def table_path() -> Path:
    return builtin_rules_dir() / "tables" / "checkpoint_patterns.yaml"


def _compile(name: str, spec: dict[str, Any]) -> re.Pattern[str]:
    pattern = re.compile(spec["regex"])
    wrong = [e for e in spec.get("examples", ()) if not pattern.search(str(e))]
    wrong += [f"near miss {n}" for n in spec.get("near_misses", ()) if pattern.search(str(n))]
    if wrong:
        raise ValueError(f"{table_path()}: pattern {name!r} misclassifies {wrong}")
    return pattern


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, re.Pattern[str]], tuple[tuple[str, re.Pattern[str]], ...]]:
    data = yaml.safe_load(table_path().read_text(encoding="utf-8"))
    pats = {name: _compile(name, spec) for name, spec in data["patterns"].items()}
    states = tuple((name, _compile(f"state_keys.{name}", spec)) for name, spec in data["state_keys"].items())
    return pats, states


def pattern(name: str) -> re.Pattern[str]:
    """A compiled file-name pattern by its name in the table (KeyError names a missing one)."""
    return _table()[0][name]


def state_key_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(state, pattern) pairs for top-level keys, in the table's order (first match wins)."""
    return _table()[1]
