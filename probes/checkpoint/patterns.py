"""The checkpoint reader's file-name and key patterns, loaded from rules/tables/checkpoint_patterns.yaml.

Each pattern carries names it must match and near misses it must not; loading checks both (the shared
pattern-table loader), so a broken edit to the table fails at start, with the pattern's name.
"""

from __future__ import annotations

import re
from pathlib import Path

from diagnose.yamlload import builtin_rules_dir, pattern_table

TABLE = "checkpoint_patterns"


def table_path() -> Path:
    return builtin_rules_dir() / "tables" / f"{TABLE}.yaml"


def pattern(name: str) -> re.Pattern[str]:
    """A compiled file-name pattern by its name in the table (KeyError names a missing one)."""
    return pattern_table(TABLE)[name]


def state_key_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(state, pattern) pairs for top-level keys, in the table's order (first match wins)."""
    return tuple(pattern_table(TABLE, "state_keys").items())
