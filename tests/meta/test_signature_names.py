"""Code that relies on a signature name declares it, and the declared names are in the catalog.

A module declares the names it reads with a module-level ``USES_SIGNATURES = frozenset({...})``
(family globs such as ``python_exception*`` count when they match a signature) and the names of
evidence it makes itself with ``EMITS_SIGNATURES``. A string literal that equals a signature name
(or is a glob matching one) in a module that does not declare it fails, unless its line says
``# not a signature`` (a field or variable that happens to share the name).
"""

from __future__ import annotations

import ast
import io
import re
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

import diagnose.probes.logs.signatures as signatures
from diagnose.commands import rules as rules_command
from diagnose.probes.logs.signatures import (
    EMITS,
    Declared,
    check_declared,
    declarations,
    declared_signature_names,
    load_signatures,
    source_roots,
)
from diagnose.ruleset import RuleSet

ROOT = Path(__file__).resolve().parents[2]
GLOB = re.compile(r"[a-z][a-z0-9_]*[*?][a-z0-9_*?]*")
NOT_A_SIGNATURE = "# not a signature"


def _sources() -> list[Path]:
    return sorted(p for folder in ("diagnose", "probes") for p in (ROOT / folder).rglob("*.py"))


def test_scan_covers_the_package_sources() -> None:
    assert {r.name for r in source_roots()} == {"diagnose", "probes"}
    assert len(declared_signature_names()) >= 30


def test_every_declared_name_is_in_the_catalog() -> None:
    errors = check_declared(load_signatures())
    assert not errors, "\n".join(str(e) for e in errors)


def test_a_declared_name_missing_from_the_catalog_is_a_located_error(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text('X = 1\nUSES_SIGNATURES = frozenset({\n    "nccl_watchdog_timeout", "no_such_signature",\n'
                      '    "nccl_ib_*", "zz_nothing_*"})\nEMITS_SIGNATURES = frozenset({"nccl_watchdog_timeout"})\n')
    errors = check_declared(load_signatures(), declared_signature_names([tmp_path]))
    assert sorted((str(e.source), e.args[0].split("'")[1]) for e in errors) == [
        (f"{module}:3", "no_such_signature"), (f"{module}:4", "zz_nothing_*"), (f"{module}:5", "nccl_watchdog_timeout")]


def test_rules_check_reports_declared_but_missing_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text('USES_SIGNATURES = frozenset({"no_such_signature"})\n')
    real = signatures.declared_signature_names
    monkeypatch.setattr(signatures, "declared_signature_names", lambda roots=None: real([tmp_path]))
    out = io.StringIO()
    assert rules_command._check(RuleSet([], load_signatures()), out) == 1
    assert f"{tmp_path / 'mod.py'}:1: declared signature 'no_such_signature' is not in the catalog" in out.getvalue()


def _literal_uses(path: Path, names: set[str]) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    inside = {id(c) for d in tree.body if isinstance(d, (ast.Assign, ast.AnnAssign))
              for t in (d.targets if isinstance(d, ast.Assign) else [d.target])
              if isinstance(t, ast.Name) and t.id in ("USES_SIGNATURES", EMITS) for c in ast.walk(d)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in inside:
            continue
        value = node.value
        named = value in names or (GLOB.fullmatch(value) and any(fnmatchcase(n, value) for n in names))
        if named and NOT_A_SIGNATURE not in lines[node.lineno - 1]:
            found.append((node.lineno, value))
    return found


def test_no_undeclared_signature_name_in_python() -> None:
    declared = declared_signature_names()
    names = set(load_signatures().by_name) | {d.name for d in declared if d.kind == EMITS}
    by_module: dict[str, set[str]] = {}
    for d in declared:
        by_module.setdefault(str(Path(d.path).resolve()), set()).add(d.name)
    undeclared = [f"{path.relative_to(ROOT)}:{line}: {value!r}"
                  for path in _sources() for line, value in _literal_uses(path, names)
                  if value not in by_module.get(str(path.resolve()), set())]
    assert not undeclared, ("signature names used in Python without a USES_SIGNATURES/EMITS_SIGNATURES "
                            "declaration in the module (or '# not a signature' on the line):\n" + "\n".join(undeclared))


def test_an_undeclared_literal_is_found(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('USES_SIGNATURES = frozenset({"python_frame"})\na = "python_frame"\nb = "nccl_ib_*"\n'
                    'c = "gloo_recv_timeout"  # not a signature: a field\n')
    names = set(load_signatures().by_name)
    declared = {d.name for d in declarations(ast.parse(path.read_text()), str(path))}
    assert [u for u in _literal_uses(path, names) if u[1] not in declared] == [(3, "nccl_ib_*")]
    assert isinstance(next(iter(declarations(ast.parse(path.read_text()), "m.py"))), Declared)
