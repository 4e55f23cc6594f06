"""YAML loading that remembers the line of every node, for located errors."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

import diagnose.cache as cache
from diagnose.errors import RuleError, RuleLocation

LinePath = tuple[Any, ...]
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it
_CODE = f"yamlload-1 {yaml.__version__}"  # bump when the parse or the line map changes


def builtin_rules_dir() -> Path:
    """Folder of the rule files shipped with the package (repo `rules/`)."""
    return Path(str(resources.files("diagnose.rules")))


def load_yaml_with_lines(path: Path) -> tuple[Any, dict[LinePath, int]]:
    """Parse ``path``; return the data and a map from key paths to 1-based lines.

    A file parsed before is read from the cache (JSON, keyed by its bytes), where JSON holds it exactly."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RuleError(f"cannot read: {exc}", RuleLocation(str(path))) from None
    name = f"yaml-{cache.digest([_CODE, raw])}.json"
    found = cache.read_json(name)
    if isinstance(found, dict) and "doc" in found and isinstance(found.get("lines"), list):
        return found["doc"], {tuple(key): line for key, line in found["lines"]}
    data, lines = _parse(path, raw)
    try:
        if json.loads(json.dumps(data)) == data:  # plain data only (no dates, no non-string keys)
            cache.write_json(name, {"doc": data, "lines": [[list(k), v] for k, v in lines.items()]})
    except (TypeError, ValueError):
        pass
    return data, lines


def _parse(path: Path, raw: bytes) -> tuple[Any, dict[LinePath, int]]:
    try:
        text = raw.decode("utf-8")
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise RuleError(f"invalid YAML: {getattr(exc, 'problem', exc)}", RuleLocation(str(path), line)) from None
    except UnicodeDecodeError as exc:
        raise RuleError(f"cannot read: {exc}", RuleLocation(str(path))) from None
    lines: dict[LinePath, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def _walk(node: yaml.Node, path: LinePath, lines: dict[LinePath, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines)
            lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for idx, child in enumerate(node.value):
            _walk(child, (*path, idx), lines)
