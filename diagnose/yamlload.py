"""YAML loading that remembers the line of every node, for located errors; named-pattern tables."""

from __future__ import annotations

import json
import re
from functools import lru_cache
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


_FLAGS = {"IGNORECASE": re.IGNORECASE, "MULTILINE": re.MULTILINE, "ASCII": re.ASCII, "DOTALL": re.DOTALL}
_MODES = ("search", "match", "fullmatch")


@lru_cache(maxsize=32)
def pattern_table(name: str, section: str = "patterns", directory: str | None = None) -> dict[str, re.Pattern[Any]]:
    """The named regexes of one section of ``rules/tables/<name>.yaml``, compiled and checked once.

    An entry is ``regex`` (Python ``re``) with optional ``flags`` (IGNORECASE, MULTILINE, ASCII, DOTALL),
    ``bytes: true`` (a bytes pattern) and ``mode`` (how callers apply it: search, the default, match or
    fullmatch); ``examples`` it must hit and ``near_misses`` it must not, both applied in that mode. A
    broken entry is a RuleError at its line, naming it.
    """
    path, entries, lines = _table_section(name, section, directory, "named patterns")
    return {key: _checked(key, spec, RuleLocation(str(path), lines.get((section, key))))
            for key, spec in entries.items()}


def _table_section(name: str, section: str, directory: str | None,
                   what: str) -> tuple[Path, dict[Any, Any], dict[LinePath, int]]:
    """The mapping ``section`` of ``rules/tables/<name>.yaml`` (path, entries, line numbers); a RuleError naming
    ``what`` it should hold when it is not a mapping."""
    path = Path(directory or builtin_rules_dir() / "tables") / f"{name}.yaml"
    data, lines = load_yaml_with_lines(path)
    entries = data.get(section) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise RuleError(f"expected a mapping {section!r} of {what}", RuleLocation(str(path), 1))
    return path, entries, lines


@lru_cache(maxsize=16)
def number_table(name: str, section: str, directory: str | None = None) -> dict[str, float]:
    """One section of ``rules/tables/<name>.yaml`` that maps names to numbers (units, factors), checked once."""
    path, entries, lines = _table_section(name, section, directory, "names to numbers")
    if not entries:
        raise RuleError(f"expected a mapping {section!r} of names to numbers", RuleLocation(str(path), 1))
    bad = [k for k, v in entries.items() if isinstance(v, bool) or not isinstance(v, (int, float))]
    if bad:
        raise RuleError(f"{section}: {bad[0]!r} is not a number", RuleLocation(str(path), lines.get((section, bad[0]))))
    return {str(k): float(v) for k, v in entries.items()}


def _checked(key: str, spec: Any, where: RuleLocation) -> re.Pattern[Any]:
    if not isinstance(spec, dict) or not isinstance(spec.get("regex"), str):
        raise RuleError(f"pattern {key!r}: expected a mapping with a 'regex'", where)
    unknown = set(spec) - {"regex", "flags", "bytes", "mode", "examples", "near_misses", "note"}
    bad_flags = [f for f in spec.get("flags", ()) if f not in _FLAGS]
    mode = spec.get("mode", "search")
    if unknown or bad_flags or mode not in _MODES:
        raise RuleError(f"pattern {key!r}: unknown {sorted(unknown) or bad_flags or mode}", where,
                        f"to use regex, flags ({', '.join(_FLAGS)}), bytes, mode ({', '.join(_MODES)}), "
                        "examples, near_misses, note")
    flags = 0
    for flag in spec.get("flags", ()):
        flags |= _FLAGS[flag]
    as_bytes = bool(spec.get("bytes"))
    try:
        pattern = re.compile(spec["regex"].encode() if as_bytes else spec["regex"], flags)
    except re.error as exc:
        raise RuleError(f"pattern {key!r}: invalid regex: {exc}", where) from None
    apply = getattr(pattern, mode)
    text = (lambda v: str(v).encode()) if as_bytes else str
    wrong = [str(e) for e in spec.get("examples", ()) if not apply(text(e))]
    wrong += [f"near miss {n}" for n in spec.get("near_misses", ()) if apply(text(n))]
    if not spec.get("examples") or not spec.get("near_misses"):
        raise RuleError(f"pattern {key!r} needs examples and near_misses", where)
    if wrong:
        raise RuleError(f"pattern {key!r} misclassifies {wrong}", where, "to fix the regex or the example")
    return pattern
