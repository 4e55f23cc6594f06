"""What identifiers look like, loaded from ``rules/redaction/*.yaml`` and checked as they load.

Mechanism, not diagnosis knowledge: the tables say how a host, an IP, a port, a user, a Slurm
partition, a job id, a pid, a MAC address or a secret shows up in launcher, NCCL, Slurm and
Python output; this module compiles them, runs their examples and near misses (a table whose
example does not match is an error naming the entry), and offers the line-gating helpers.
"""

from __future__ import annotations

import re
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diagnose.errors import RuleError, RuleLocation
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

Gate = Union[tuple[str, ...], re.Pattern[str]]  # noqa: UP007 (a runtime alias, py3.10)


class _GateSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    regex: str


class LearnExample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    learns: dict[str, str]


class LearnEntry(BaseModel):
    """A pattern that finds identifiers named by their context."""

    model_config = ConfigDict(extra="forbid")
    name: str
    gate: list[str] | _GateSpec
    pattern: str
    examples: list[LearnExample] = Field(min_length=1)
    near_misses: list[str] = Field(min_length=1)


class StructExample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    hides: list[str] = Field(min_length=1)


class StructEntry(BaseModel):
    """One branch of the replacing alternation, with the gates that select its lines."""

    model_config = ConfigDict(extra="forbid")
    name: str
    pattern: str | None
    gates: list[list[str] | _GateSpec] = Field(default_factory=list)
    examples: list[StructExample] = Field(default_factory=list)
    near_misses: list[str] = Field(default_factory=list)

    @field_validator("examples")
    @classmethod
    def _needs_examples(cls, v: list[StructExample], info: Any) -> list[StructExample]:
        if info.data.get("pattern") is not None and not v:
            raise ValueError("a branch with a pattern needs at least one example")
        return v


class Words(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kinds: list[str]
    public_roots: list[str]
    env_dirs: list[str]
    file_exts: list[str]
    public_domains: list[str]
    generic: list[str]
    header_words: list[str]
    code_words: list[str]
    table_gate: list[str]
    table_columns: dict[str, str]
    structure_kind: dict[str, dict[str, str]]
    fragments: dict[str, str]


def _table(name: str) -> tuple[Any, str]:
    path = builtin_rules_dir() / "redaction" / name
    data, _ = load_yaml_with_lines(path)
    return data, str(path)


def _expand(pattern: str, fragments: dict[str, str]) -> str:
    for key, value in fragments.items():
        pattern = pattern.replace("{{" + key + "}}", value)
    return pattern


def _compile(pattern: str, where: str, name: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RuleError(f"redaction entry {name!r}: invalid regex: {exc}", RuleLocation(where)) from None


def _gate(spec: list[str] | _GateSpec, fragments: dict[str, str], where: str, name: str) -> Gate:
    """Literal gates are searched with `str.find`, the rest compiled."""
    if isinstance(spec, list):
        return tuple(spec)
    return _compile(_expand(spec.regex, fragments), where, name)


def _gate_hits(gate: Gate, text: str) -> bool:
    return any(g in text for g in gate) if isinstance(gate, tuple) else gate.search(text) is not None


def _load() -> dict[str, Any]:
    raw, wpath = _table("words.yaml")
    words = Words.model_validate(raw)
    frags = words.fragments
    raw, lpath = _table("learn.yaml")
    learn_entries = [LearnEntry.model_validate(e) for e in raw["learn"]]
    learn = []
    for e in learn_entries:
        gate, pat = _gate(e.gate, frags, lpath, e.name), _compile(_expand(e.pattern, frags), lpath, e.name)
        for ex in e.examples:
            found = {k: v for m in pat.finditer(ex.text) for k, v in m.groupdict().items() if v is not None}
            if not _gate_hits(gate, ex.text) or any(found.get(k) != v for k, v in ex.learns.items()):
                raise RuleError(f"redaction entry {e.name!r}: example {ex.text!r} learns {found}, not {ex.learns}",
                                RuleLocation(lpath))
        for near in e.near_misses:
            if pat.search(near):
                raise RuleError(f"redaction entry {e.name!r}: near miss {near!r} matches", RuleLocation(lpath))
        learn.append((gate, pat))
    raw, spath = _table("structure.yaml")
    struct_entries = [StructEntry.model_validate(e) for e in raw["structure"]]
    structure, gates = [], []
    for e in struct_entries:
        key = e.name.replace("-", "_")
        if e.pattern is None:
            structure.append((key, None))
            continue
        pattern = _expand(e.pattern, frags)
        pat = _compile(pattern, spath, e.name)
        for ex in e.examples:
            spans = [m.span() for m in pat.finditer(ex.text)]
            hidden = all(any(a <= ex.text.find(h) and ex.text.find(h) + len(h) <= b for a, b in spans) for h in ex.hides)
            if not spans or not hidden:
                raise RuleError(f"redaction branch {e.name!r}: example {ex.text!r} does not cover {ex.hides}",
                                RuleLocation(spath))
        for near in e.near_misses:
            if pat.search(near):
                raise RuleError(f"redaction branch {e.name!r}: near miss {near!r} matches", RuleLocation(spath))
        structure.append((key, pattern))
        gates += [(_gate(g, frags, spath, e.name), (key,)) for g in e.gates]
    return {"words": words, "learn": learn, "structure": structure, "gates": gates, "fragments": frags}


_T = _load()
_W: Words = _T["words"]
KINDS = (*_W.kinds, "mac", "secret", "pod")
PUBLIC_ROOTS = frozenset(_W.public_roots)
ENV_DIRS = tuple(_W.env_dirs)
FILE_EXTS = frozenset(_W.file_exts)
PUBLIC_DOMAINS = tuple(_W.public_domains)
GENERIC = frozenset(_W.generic)
HEADER_WORDS = frozenset(_W.header_words)
CODE_WORDS = frozenset(_W.code_words)
TABLE_GATE = tuple(_W.table_gate)
TABLE_COLUMNS = dict(_W.table_columns)
STRUCTURE_KIND = {k: dict(v) for k, v in _W.structure_kind.items()}
TLD_AMBIGUOUS = frozenset(_W.fragments["TLDS_AMBIGUOUS"].split("|"))
LIT_SUFFIX = _W.fragments["LIT_SUFFIX"]
LEARN: list[tuple[Gate, re.Pattern[str]]] = _T["learn"]
STRUCTURE: list[tuple[str, str | None]] = _T["structure"]
REDACT_GATES: list[tuple[Gate, tuple[str, ...]]] = _T["gates"]
NODELIST_ITEM = re.compile(_W.fragments["NODELIST_ITEM"])
_NODELIST_PART = re.compile(_W.fragments["NODELIST_PART"])


def line_spans(text: str, gate: Gate) -> list[tuple[int, int]]:
    """(start, end) spans of the lines of `text` that `gate` matches, in order."""
    if not isinstance(gate, tuple):
        return _regex_spans(text, gate)
    spans: set[tuple[int, int]] = set()
    for literal in gate:
        hit = text.find(literal)
        while hit >= 0:
            start = text.rfind("\n", 0, hit) + 1
            end = text.find("\n", hit + len(literal))
            end = len(text) if end < 0 else end
            spans.add((start, end))
            hit = text.find(literal, end)
    return sorted(spans)


def _regex_spans(text: str, gate: re.Pattern[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    m = gate.search(text)
    while m:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        spans.append((start, end))
        m = gate.search(text, end)
    return spans


def gated_lines(text: str, gates: list[tuple[Gate, tuple[str, ...]]]) -> dict[int, tuple[int, set[str]]]:
    """Line start -> (line end, names of the gates that selected the line)."""
    lines: dict[int, tuple[int, set[str]]] = {}
    for gate, names in gates:
        for start, end in line_spans(text, gate):
            lines.setdefault(start, (end, set()))[1].update(names)
    return lines


MAX_NODES = 10000


def expand_nodelist(spec: str) -> list[str]:
    """Expand one Slurm host expression such as ``m9g-1-[3-4,7]`` into host names."""
    m = _NODELIST_PART.fullmatch(spec)
    if not m:
        return [spec]
    prefix, body, suffix = m.groups()
    hosts: list[str] = []
    for part in body.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (hi or lo).isdigit():
            count = int(hi or lo) - int(lo) + 1
            if count > 10000 - len(hosts):  # a planted node[0-99999999999] costs nothing
                count = 10000 - len(hosts)
            hosts.extend(f"{prefix}{i:0{len(lo)}d}{suffix}" for i in range(int(lo), int(lo) + max(count, 0)))
        if len(hosts) >= 10000:
            break
    return hosts


def compress_nodes(names: list[str]) -> str:
    """``node-3,node-4`` as ``node-[3-4]`` when consecutive."""
    nums = [int(n.split("-")[1]) for n in names]
    if len(nums) > 1 and nums == list(range(nums[0], nums[0] + len(nums))):
        return f"node-[{nums[0]}-{nums[-1]}]"
    return ",".join(names)
