"""In-function imports only where start-up time, an optional dependency or a cycle needs them, each with
its reason: a comment on the import (or directly above its run of imports) that says ``start-up: ...``,
``optional`` (dependency) or ``cycle: ...``."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REASON = re.compile(r"#.*\b(start-up:|optional|cycle:)")
HEAVY = ("torch", "rich", "jinja2", "hyperscan", "pydantic", "yaml", "networkx", "diagnose.output.html")


def _indented_imports(path: Path) -> list[ast.stmt]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top]


def unexplained(path: Path) -> list[int]:
    """Lines of the indented imports in ``path`` that carry no reason comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for node in _indented_imports(path):
        own = lines[node.lineno - 1: node.end_lineno]
        above = node.lineno - 2
        while above >= 0 and re.match(r"\s*(from|import)\s", lines[above]):
            above -= 1
        if not any(REASON.search(line) for line in own) and not (
                above >= 0 and lines[above].lstrip().startswith("#") and REASON.search(lines[above])):
            out.append(node.lineno)
    return out


def test_every_in_function_import_says_why() -> None:
    missing = [f"{path.relative_to(ROOT)}:{line}" for folder in ("diagnose", "probes")
               for path in sorted((ROOT / folder).rglob("*.py")) for line in unexplained(path)]
    assert not missing, "in-function imports without a '# start-up: ...', '# optional dependency' or " \
                        "'# cycle: ...' reason (hoist them to the module top otherwise):\n" + "\n".join(missing)


def test_the_check_sees_a_bare_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def f():\n    import json\n\n\ndef g():\n    # start-up: only here\n    import csv\n"
                    "    import zlib\n    from os import path  # cycle: a test\n")
    assert unexplained(path) == [2]


def test_cli_help_loads_no_heavy_module() -> None:
    code = ("import sys, diagnose.cli\ntry:\n    diagnose.cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
