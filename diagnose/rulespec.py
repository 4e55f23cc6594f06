"""The rule language: one rule per YAML file, validated by pydantic, loaded with located errors."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from diagnose.errors import RuleError, RuleLocation, RuleSetError
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines, pattern_table

RULE_DIRS_ENV = "DIAGNOSE_RULES"


class PredicateCall(BaseModel):
    """One condition: a named predicate with parameters, optionally negated and bound to a name."""

    model_config = ConfigDict(frozen=True)

    predicate: str
    params: dict[str, Any] = Field(default_factory=dict)
    bind: str | None = None
    negate: bool = False

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "predicate" in data:
            return data
        data = dict(data)
        bind = data.pop("as", None)
        negate = False
        if set(data) == {"not"}:
            negate, data = True, data["not"]
            if not isinstance(data, dict):
                raise ValueError("'not:' takes one predicate mapping")
        if len(data) != 1:
            raise ValueError(f"a condition names exactly one predicate, got {sorted(data)}")
        (name, params), = data.items()
        return {"predicate": name, "params": params or {}, "bind": bind, "negate": negate}


class Outcome(BaseModel):
    """One branch: when its extra conditions hold, conclude this cause."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    when: tuple[PredicateCall, ...] = ()
    cause: str
    refines: str | None = None
    confidence: Literal["low", "medium", "high"]
    symptom: str | None = None
    culprits: str | None = Field(None, description="binding whose ranks are the culprits")
    message: str
    alternatives: tuple[str, ...] = Field((), description="causes the same evidence also fits, ranked below it")
    restates_symptom: bool = Field(False, description="the conclusion only restates what was seen (a process "
                                   "failed): it ranks below causes that the report's words back")


class Explain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    why: str = Field(min_length=10)


class Rule(BaseModel):
    """A declarative rule (see rules/README.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    title: str
    status: Literal["experimental", "stable", "deprecated"] = "stable"
    symptoms: tuple[str, ...] = Field(min_length=1)
    runbook: tuple[str, ...] = ()
    requires: tuple[str, ...] = Field(min_length=1)
    match: tuple[PredicateCall, ...] = Field(min_length=1)
    outcomes: tuple[Outcome, ...] = Field(min_length=1)
    explain: Explain
    fix: str
    next_steps: tuple[str, ...] = Field(min_length=1)
    collect_next: tuple[str, ...] = Field((), description="what to enable next time to be sure")
    aliases: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    source: str = ""
    family: str = ""
    line: int = 1




def rule_dirs(extra: Iterable[Path] = ()) -> list[Path]:
    """The built-in rules folder, then ``$DIAGNOSE_RULES`` (os.pathsep-separated), then ``extra``."""
    dirs = [builtin_rules_dir()]
    env = os.environ.get(RULE_DIRS_ENV, "")
    dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in extra]
    return dirs


# Folders of rules/ that hold data (signatures, lookup tables, artifact and redaction patterns), not rules.
DATA_FOLDERS = frozenset({"signatures", "tables", "artifacts", "redaction", "data"})


def rule_files(dirs: Iterable[Path]) -> list[Path]:
    """Rule files under ``dirs`` (tests, signatures and data folders excluded)."""
    out = []
    for d in dirs:
        for path in sorted(Path(d).rglob("*.yaml")):
            if path.name.endswith(".test.yaml") or DATA_FOLDERS & set(path.relative_to(d).parts[:-1]) \
                    or path.parent == Path(d):
                continue
            out.append(path)
    return out


def load_rule_file(path: Path) -> Rule:
    """Parse and validate one rule file (structure only; cross checks are in validation.py)."""
    data, lines = load_yaml_with_lines(path)
    if not isinstance(data, dict):
        raise RuleError("a rule file holds one mapping", RuleLocation(str(path), 1))
    try:
        rule = Rule.model_validate({**data, "source": str(path), "family": path.parent.name})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not isinstance(p, str) or not p[0].isupper())
        line = _nearest_line(lines, loc)
        raise RuleError(f"{'.'.join(map(str, loc)) or 'rule'}: {err['msg']}", RuleLocation(str(path), line),
                        "to follow the rule schema in rules/README.md") from None
    if path.stem != rule.id:
        raise RuleError(f"rule id {rule.id!r} differs from the file name {path.stem!r}",
                        RuleLocation(str(path), lines.get(("id",), 1)), "to rename the file or the id")
    for key, value in _strings(data):
        if pattern_table("identifying")["identifying"].search(value):
            raise RuleError(f"literal host name, address, job id or path in a rule: {value[:60]!r}",
                            RuleLocation(str(path), lines.get(key, 1)), "to describe the pattern, not one case")
    return rule


def _nearest_line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _strings(data: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for k, v in data.items():
            yield from _strings(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _strings(v, (*path, i))


def load_rules(extra_dirs: Iterable[Path] = ()) -> list[Rule]:
    """Load every rule file, collecting all errors before raising (no cross checks)."""
    rules, errors = [], []
    for path in rule_files(rule_dirs(extra_dirs)):
        try:
            rules.append(load_rule_file(path))
        except RuleError as exc:
            errors.append(exc)
    if errors:
        raise RuleSetError(errors)
    return rules
