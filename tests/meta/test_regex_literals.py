"""No regex literal outside rules/ except in the signature loader and the scan engines.

Modules named ``signatures.py``, ``scanner.py`` or ``scan_*.py`` may hold regex literals; elsewhere a
``re`` call whose pattern is written in the code (a string, an f-string, or a module constant holding
one) is allowed only when its line says ``# regex: <reason>`` (mechanical, not knowledge of tool
output), and only a handful of them. Patterns that recognise tool output live in ``rules/`` tables
(``rules/tables/*.yaml``, loaded by ``diagnose.yamlload.pattern_table`` with examples and near misses).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from diagnose.errors import RuleError
from diagnose.yamlload import builtin_rules_dir, pattern_table

ROOT = Path(__file__).resolve().parents[2]
RE_CALLS = frozenset({"compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer"})
REASON = re.compile(r"#\s*regex:\s*\S")
MAX_EXPLAINED = 5


def allowed_module(path: Path) -> bool:
    """The signature loader and the scan engines."""
    return path.name in ("signatures.py", "scanner.py") or (path.name.startswith("scan_") and path.suffix == ".py")


def _is_literal(node: ast.AST, constants: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left, constants) or _is_literal(node.right, constants)
    return isinstance(node, ast.Name) and node.id in constants


def regex_literals(path: Path) -> list[tuple[int, bool]]:
    """(line, has a reason comment) of each ``re.<call>(<literal pattern>, ...)`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    tree, lines = ast.parse(text), text.splitlines()
    constants = {t.id for n in tree.body if isinstance(n, ast.Assign) and _is_literal(n.value, set())
                 for t in n.targets if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RE_CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args
                and _is_literal(node.args[0], constants)):
            own = lines[node.lineno - 1: (node.end_lineno or node.lineno)]
            out.append((node.lineno, any(REASON.search(line) for line in own)))
    return out


def _python_files() -> list[Path]:
    return sorted(p for folder in ("diagnose", "probes") for p in (ROOT / folder).rglob("*.py"))


def test_no_regex_literal_outside_the_loader_and_scan_engines() -> None:
    found = [(p, line, ok) for p in _python_files() if not allowed_module(p) for line, ok in regex_literals(p)]
    bare = [f"{p.relative_to(ROOT)}:{line}" for p, line, ok in found if not ok]
    assert not bare, ("regex literals outside rules/: move patterns that recognise tool output to a "
                      "rules/tables/ table, or give a mechanical one a '# regex: <reason>' comment:\n" + "\n".join(bare))
    assert len(found) <= MAX_EXPLAINED, [f"{p.relative_to(ROOT)}:{line}" for p, line, _ in found]


def test_the_check_sees_literals(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('import re\nPAT = r"a+"\nX = re.compile(PAT)\nY = re.search(f"{PAT}b", "ab")\n'
                    'Z = re.split(r"\\s+", "a b")  # regex: whitespace\nW = re.compile(load())\n')
    assert regex_literals(path) == [(3, False), (4, False), (5, True)]
    assert allowed_module(Path("scan_steps.py")) and allowed_module(Path("signatures.py"))
    assert not allowed_module(Path("patterns.py"))


@pytest.mark.parametrize("table", sorted(p.stem for p in (builtin_rules_dir() / "tables").glob("*.yaml")
                                         if "patterns:" in p.read_text(encoding="utf-8")))
def test_every_pattern_table_loads_with_its_examples(table: str) -> None:
    assert pattern_table(table)


def test_a_wrong_example_or_a_matching_near_miss_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("patterns:\n  ok:\n    regex: 'a+'\n    examples: [aa]\n    near_misses: [b]\n"
                                     "  bad:\n    regex: 'b+'\n    examples: [bb]\n    near_misses: [abba]\n")
    with pytest.raises(RuleError, match=r"t\.yaml:6: pattern 'bad' misclassifies \['near miss abba'\]"):
        pattern_table("t", directory=str(tmp_path))
    (tmp_path / "u.yaml").write_text("patterns:\n  none:\n    regex: 'a+'\n    examples: [a]\n")
    with pytest.raises(RuleError, match="needs examples and near_misses"):
        pattern_table("u", directory=str(tmp_path))
