"""The import-layer contract: each layer imports only itself and the layers below it; no cycles.

Layers, top to bottom (a module belongs to the first prefix that matches it):

    entry     diagnose.cli, diagnose.__main__, diagnose (package front door)
    commands  diagnose.commands
    tools     diagnose.authoring, diagnose.hook (in-process; runs the engine when available)
    core      diagnose.engine, .analyzers, .predicates, .ruleset, .rulespec, .graph, .context,
              .scoring, .registry
    output    diagnose.output (renderers and redaction: they never import predicates or the engine)
    probes    diagnose.probes (evidence collectors: they never import the engine)
    models    diagnose.evidence, diagnose.output.report, .errors, .yamlload, .vocab, .ranks, .units, .cache

In-function imports count the same as top-level ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("diagnose.evidence", "diagnose.output.report", "diagnose.errors", "diagnose.yamlload",
          "diagnose.vocab", "diagnose.ranks", "diagnose.units", "diagnose.cache")
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("models", MODELS),
    ("probes", ("diagnose.probes",)),
    ("output", ("diagnose.output",)),
    ("core", ("diagnose.engine", "diagnose.analyzers", "diagnose.predicates", "diagnose.ruleset",
              "diagnose.rulespec", "diagnose.graph", "diagnose.context", "diagnose.scoring",
              "diagnose.registry")),
    ("tools", ("diagnose.authoring", "diagnose.hook")),
    ("commands", ("diagnose.commands",)),
    ("entry", ("diagnose.cli", "diagnose.__main__", "diagnose")),
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "probes":
        parts = ["diagnose", "probes", *parts[1:]]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for folder in ("diagnose", "probes"):
        for path in (ROOT / folder).rglob("*.py"):
            out[_module_name(path)] = path
    return out


def _layer(module: str) -> int:
    for idx, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return idx
    raise AssertionError(f"{module} belongs to no layer")


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def _graph() -> nx.DiGraph:
    mods = _modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        graph.add_node(name)
        for target in _imports(path, name, set(mods)):
            graph.add_edge(name, target)
    return graph


def test_layer_contract_imports_only_go_down() -> None:
    graph = _graph()
    broken = []
    for src, dst in graph.edges:
        if dst == "diagnose":  # the package itself: importing a submodule touches it; not a dependency
            continue
        if _layer(dst) > _layer(src):
            broken.append(f"{src} ({LAYERS[_layer(src)][0]}) imports {dst} ({LAYERS[_layer(dst)][0]})")
    assert not broken, "layer contract broken:\n" + "\n".join(sorted(broken))


def test_layer_contract_no_import_cycles() -> None:
    graph = _graph()
    graph.remove_nodes_from([n for n in list(graph) if n == "diagnose"])
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles[:5]}"


@pytest.mark.parametrize("forbidden", ["diagnose.predicates", "diagnose.engine"])
def test_layer_contract_output_never_imports_rules_machinery(forbidden: str) -> None:
    graph = _graph()
    bad = [s for s, d in graph.edges if s.startswith("diagnose.output") and d.startswith(forbidden)]
    assert not bad, bad
