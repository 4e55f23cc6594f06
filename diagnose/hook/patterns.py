"""The hook's text patterns (rules/tables/hook_patterns.yaml), loaded when an exception is first read.

The hook imports only the standard library; the table (and YAML) load on first use, in the capture.
"""

from __future__ import annotations

import re


def pattern(name: str) -> re.Pattern[str]:
    """A named pattern of the hook's table (KeyError names a missing one)."""
    from diagnose.yamlload import pattern_table  # start-up: the hook imports only the standard library

    return pattern_table("hook_patterns")[name]
