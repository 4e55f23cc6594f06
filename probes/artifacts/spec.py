"""The recognition data of ``rules/artifacts/*.yaml``: named line patterns (with examples and near
misses, checked at load time) and the tables each artifact family reads (launchers, option names,
config keys, tool outputs, metric columns, symptom inference)."""

from __future__ import annotations

import re
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

import diagnose.cache as cache
from diagnose.errors import RuleError, RuleLocation, RuleSetError

try:  # the fast multi-literal search is optional: substring tests are a correct fallback
    import hyperscan  # type: ignore[import-untyped]  # optional dependency: hyperscan
except ImportError:  # pragma: no cover - exercised where the wheel is missing
    hyperscan = None
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

__all__ = ["LinePattern", "FamilySpec", "family", "artifacts_dir", "strings_in", "check_families"]


class PatternExample(BaseModel):
    """A line a pattern must match, with the named groups it must yield."""

    model_config = ConfigDict(extra="forbid")
    line: str
    fields: dict[str, Any] = Field(default_factory=dict)


class LinePattern(BaseModel):
    """One named regex over a line (Python ``re``, ASCII classes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    regex: str
    caseless: bool = False
    description: str = ""
    needs: tuple[str, ...] = Field((), description="a file holding none of these strings is not searched (a cheap gate)")
    examples: tuple[PatternExample, ...] = Field(min_length=1)
    near_misses: tuple[str, ...] = Field(min_length=1)

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, re.ASCII | (re.IGNORECASE if self.caseless else 0))

    @model_validator(mode="after")
    def _examples_hold(self, info: ValidationInfo) -> LinePattern:
        if (info.context or {}).get("examples_checked"):  # the same file passed this check in an earlier run
            return self
        try:
            rx = re.compile(self.regex, re.ASCII | (re.IGNORECASE if self.caseless else 0))
        except re.error as exc:
            raise ValueError(f"pattern {self.name}: {exc}") from None
        for ex in self.examples:
            m = rx.search(ex.line)
            if m is None:
                raise ValueError(f"pattern {self.name}: example does not match: {ex.line!r}")
            got = {k: v for k, v in m.groupdict().items() if v is not None}
            for key, want in ex.fields.items():
                if str(got.get(key)) != str(want):
                    raise ValueError(f"pattern {self.name}: {ex.line!r} gives {key}={got.get(key)!r}, not {want!r}")
        for miss in self.near_misses:
            if rx.search(miss):
                raise ValueError(f"pattern {self.name}: near miss matches: {miss!r}")
        return self


class FamilySpec(BaseModel):
    """One artifact family: its patterns by name, and its tables (free-form, read by the family's parser)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    family: str
    description: str
    sources: tuple[str, ...] = Field(min_length=1, description="documentation the patterns and tables follow")
    patterns: tuple[LinePattern, ...] = ()
    tables: dict[str, Any] = Field(default_factory=dict)

    @cached_property
    def needles(self) -> tuple[str, ...]:
        """Every ``needs`` string of the family's patterns."""
        return tuple(sorted({n for p in self.patterns for n in p.needs}))

    @cached_property
    def multiline(self) -> dict[str, re.Pattern[str]]:
        """Each pattern compiled to search a whole text at once (``^``/``$`` at every line)."""
        return {p.name: re.compile(p.regex, re.ASCII | re.MULTILINE | (re.IGNORECASE if p.caseless else 0))
                for p in self.patterns}

    @cached_property
    def by_name(self) -> dict[str, LinePattern]:
        return {p.name: p for p in self.patterns}

    def rx(self, name: str) -> re.Pattern[str]:
        """The compiled pattern ``name``."""
        return self.by_name[name].compiled

    def present(self, text: str) -> list[LinePattern]:
        """The patterns whose ``needs`` gate passes for ``text`` (all of them when a pattern has no gate)."""
        found = strings_in(text, self.needles)
        return [p for p in self.patterns if not p.needs or found.intersection(p.needs)]


def strings_in(text: str, strings: tuple[str, ...]) -> set[str]:
    """Which of ``strings`` occur in ``text``: one Hyperscan pass when the wheel is there, else substring tests."""
    db = _literal_db(strings) if hyperscan is not None and strings else None
    if db is None:
        return {s for s in strings if s in text}
    hits: set[int] = set()
    db.scan(text.encode("utf-8", "replace"), match_event_handler=lambda i, *_: hits.add(i))
    return {strings[i] for i in hits}


@lru_cache(maxsize=32)
def _literal_db(strings: tuple[str, ...]) -> Any:
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[re.escape(s).encode() for s in strings], ids=list(range(len(strings))),
                   elements=len(strings), flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(strings))
    except Exception:  # noqa: BLE001 - an engine that refuses a literal falls back to substring tests
        return None
    return db


def artifacts_dir() -> Path:
    """Folder of the shipped artifact recognition files."""
    return builtin_rules_dir() / "artifacts"


@lru_cache(maxsize=16)
def family(name: str, folder: str | None = None) -> FamilySpec:
    """Load and validate ``rules/artifacts/<name>.yaml``; a broken file raises a located RuleSetError."""
    path = Path(folder or artifacts_dir()) / f"{name}.yaml"
    data, lines = load_yaml_with_lines(path)  # raises a located RuleError when the file cannot be read
    checked = f"artifacts-checked-{cache.digest([_checker_digest(), path.read_bytes()])}.json"
    # Compiling every pattern to try its examples costs a sixth of a second over all families: done once per
    # version of the file (and of this code), remembered in the cache, skipped while both stay the same.
    known = cache.read_json(checked) is not None
    spec = _validated(path, data, lines, examples_checked=known)
    if not known:
        cache.write_json(checked, True)
    return spec


@lru_cache(maxsize=1)
def _checker_digest() -> str:
    """Digest of what checks a family's examples (this module and pydantic), read once per process."""
    return cache.digest([pydantic.VERSION, Path(__file__).read_bytes()])


def _validated(path: Path, data: Any, lines: dict[Any, int], examples_checked: bool) -> FamilySpec:
    try:
        return FamilySpec.model_validate(data, context={"examples_checked": examples_checked})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = next((lines[loc[:n]] for n in range(len(loc), -1, -1) if loc[:n] in lines), None)
        raise RuleSetError([RuleError(f"{'.'.join(map(str, loc))}: {err['msg']}", RuleLocation(str(path), line))]) from None


def check_families(folder: Path | None = None) -> list[RuleError]:
    """Every artifact family file of ``folder`` validated in full, examples and near misses included (the cache
    marker that lets a run skip them is not consulted): what ``diagnose rules check`` reports."""
    errors: list[RuleError] = []
    for path in sorted(Path(folder or artifacts_dir()).glob("*.yaml")):
        try:
            _validated(path, *load_yaml_with_lines(path), examples_checked=False)
        except (RuleSetError, RuleError) as exc:
            errors += exc.errors if isinstance(exc, RuleSetError) else [exc]
    return errors
