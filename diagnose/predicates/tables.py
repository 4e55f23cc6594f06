"""Code tables (`rules/tables/*.yaml`): a status or error code -> its name, meaning and likely cause.

A table is data with its `origin:` (where the codes are defined). Rules look codes up through
`code_in_table`: a line's field (``12``, ``status=12``, ``IBV_WC_RETRY_EXC_ERR(12)``,
``ncclSystemError``) names an entry, and the entry's cause decides which outcome holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path, PureWindowsPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diagnose.context import Context
from diagnose.errors import RuleError, RuleLocation
from diagnose.predicates.base import Binding, predicate, ranks_of
from diagnose.vocab import CAUSES
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

USES_SIGNATURES = frozenset({"python_frame", "python_exception*"})


class TableEntry(BaseModel):
    """One code: its symbolic name, what it means, and the cause it usually points at."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str
    text: str | None = None
    meaning: str | None = None
    cause: str | None = None
    alternatives: tuple[str, ...] = ()

    @field_validator("cause")
    @classmethod
    def _known_cause(cls, value: str | None) -> str | None:
        if value is not None and value not in CAUSES:
            raise ValueError(f"unknown cause {value!r}")
        return value


class FrameEntry(BaseModel):
    """A function that, as the failing frame of a traceback, points at a cause."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    function: str
    file: str | None = Field(None, description="basename of the file that defines it (any file when absent)")
    cause: str
    alternatives: tuple[str, ...] = ()
    meaning: str
    wrapped: bool = Field(False, description="a function of that name in any other file (a framework's or a "
                          "project's wrapper, e.g. a pipeline's load_state_dict) does the same work")

    @field_validator("cause")
    @classmethod
    def _known_cause(cls, value: str) -> str:
        if value not in CAUSES:
            raise ValueError(f"unknown cause {value!r}")
        return value

    def matches(self, function: str, file: str) -> bool:
        return function == self.function and (self.file is None or file == self.file)


class Table(BaseModel):
    """A table as written in rules/tables/<table>.yaml: codes (status/error numbers) or frame functions."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    table: str
    description: str
    origin: tuple[str, ...] = Field(min_length=1)
    codes: dict[int, TableEntry] = Field(default_factory=dict)
    frames: tuple[FrameEntry, ...] = ()
    lists: dict[str, tuple[str, ...]] = Field(default_factory=dict, description="named word lists that several "
                                             "rules share (e.g. the exception types of a programming error)")

    @field_validator("origin", mode="before")
    @classmethod
    def _origin_list(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    def frame(self, function: str, file: str) -> FrameEntry | None:
        """The entry for a traceback frame (function name, file basename), if any: the entry of that file,
        else a ``wrapped`` entry of that name."""
        return (next((f for f in self.frames if f.matches(function, file)), None)
                or next((f for f in self.frames if f.wrapped and f.function == function), None))

    def lookup(self, value: Any) -> tuple[int, TableEntry] | None:
        """The entry a field value names: by symbolic name anywhere in it, else by its first number."""
        text = str(value)
        named = [(code, entry) for code, entry in self.codes.items() if entry.name and entry.name in text]
        if named:
            return max(named, key=lambda ce: len(ce[1].name))
        digits = _first_number(text)
        if digits is not None and digits in self.codes:
            return digits, self.codes[digits]
        return None


def table_list(ref: str) -> tuple[str, ...]:
    """A named list of a table, ``"<table>.<list>"`` (e.g. ``python_errors.programming_errors``)."""
    name, _, key = ref.partition(".")
    table = load_table(name)
    if key not in table.lists:
        raise RuleError(f"table {name!r} has no list {key!r}", RuleLocation(str(tables_dir() / f"{name}.yaml"), 1))
    return table.lists[key]


def _first_number(text: str) -> int | None:
    start = next((i for i, ch in enumerate(text) if ch.isdigit()), None)
    if start is None:
        return None
    end = start
    while end < len(text) and text[end].isdigit():
        end += 1
    return int(text[start:end])


def tables_dir() -> Path:
    return builtin_rules_dir() / "tables"


@lru_cache(maxsize=16)
def load_table(name: str, directory: str | None = None) -> Table:
    """Load and validate one table by name; a bad table is a located rule error."""
    path = Path(directory or tables_dir()) / f"{name}.yaml"
    data, _lines = load_yaml_with_lines(path)
    try:
        table = Table.model_validate(data)
    except ValueError as exc:
        raise RuleError(f"invalid table: {str(exc).splitlines()[0]}", RuleLocation(str(path), 1),
                        "to follow the table format (table, description, origin, codes)") from None
    if table.table != name:
        raise RuleError(f"table {table.table!r} differs from its file name", RuleLocation(str(path), 1))
    return table


@predicate(binds=("code", "code_name", "meaning", "alternatives"), kinds=("log_line",))
def code_in_table(ctx: Context, names: Sequence[str], fields: Sequence[str], table: str,
                  causes: Sequence[str] = (), unknown: bool = False) -> Binding | None:
    """Lines of the named signatures whose code (the first of ``fields`` present) the table maps to one
    of ``causes``; with ``unknown``, lines whose code the table does not know (or that carry none)."""
    tab = load_table(table)
    hits, found = [], None
    for name in names:
        for line in ctx.lines(name):
            value = next((line.fields[f] for f in fields if line.fields.get(f) not in (None, "")), None)
            entry = tab.lookup(value) if value is not None else None
            if unknown and entry is None:
                hits.append(line)
            elif not unknown and entry is not None and entry[1].cause in causes:
                hits.append(line)
                found = found or entry
    if not hits:
        return None
    fields_out: dict[str, Any] = {"code": "?", "code_name": "an unknown code", "meaning": "?", "alternatives": ""}
    if found is not None:
        fields_out = _entry_fields(*found)
    return Binding(ranks_of(hits), tuple(hits[:20]), {**fields_out, "count": len(hits)})


def _entry_fields(code: int, entry: TableEntry) -> dict[str, Any]:
    """What a rule's message may cite of a table entry: its code, name, meaning and alternatives."""
    return {"code": code, "code_name": entry.name, "meaning": entry.meaning or entry.text or entry.name,
            "alternatives": ", ".join(entry.alternatives)}


@predicate(binds=("code", "code_name", "meaning", "alternatives"), kinds=("log_line",))
def signature_in_table(ctx: Context, table: str, causes: Sequence[str]) -> Binding | None:
    """Lines of the signatures the table's entries name (an entry's ``signature``) whose entry points at one of
    ``causes``: a code with a signature of its own but no rule of its own still maps to its table cause."""
    tab = load_table(table)
    hits, found = [], None
    for code, entry in tab.codes.items():
        name = getattr(entry, "signature", None)
        if not name or entry.cause not in causes:
            continue
        lines = ctx.lines(name)
        hits.extend(lines)
        if lines and found is None:
            found = (code, entry)
    if found is None:
        return None
    return Binding(ranks_of(hits), tuple(hits[:20]), {**_entry_fields(*found), "count": len(hits)})


FRAME_GAP = 6  # lines between two frames of one traceback (source line, carets, locals)


@predicate(binds=("function", "file", "meaning", "alternatives"), kinds=("log_line",))
def failing_frame(ctx: Context, table: str, causes: Sequence[str], incomplete_only: bool = True) -> Binding | None:
    """Tracebacks (frame lines of one writer, close together) whose innermost frame found in the
    frame table points at one of ``causes``. With ``incomplete_only``, only tracebacks whose final
    exception line is missing (a cut paste, a process killed while printing) count: a complete one
    is read through its exception."""
    tab = load_table(table)
    hits: list[Any] = []
    found: Any = None
    for frames in _tracebacks(ctx):
        if incomplete_only and _has_exception_after(ctx, frames[-1]):
            continue
        for fr in reversed(frames):
            entry = tab.frame(str(fr.fields.get("func", "")), PureWindowsPath(str(fr.fields.get("path", ""))).name)
            if entry is not None:
                if entry.cause in causes:
                    hits.append(fr)
                    found = found or (entry, fr)
                break
    if not hits:
        return None
    entry, fr = found
    return Binding(ranks_of(hits), tuple(hits[:20]), {
        "function": entry.function, "file": PureWindowsPath(str(fr.fields.get("path", ""))).name,
        "meaning": entry.meaning,
        "alternatives": ", ".join(entry.alternatives), "count": len(hits)})


def _tracebacks(ctx: Context) -> list[list[Any]]:
    """Frame lines grouped into tracebacks: same file, same rank, at most FRAME_GAP lines apart."""
    frames = sorted(ctx.lines("python_frame"), key=lambda e: (e.provenance.source or "", e.rank if e.rank is not None
                                                              else -1, e.provenance.line or 0))
    groups: list[list[Any]] = []
    for fr in frames:
        last = groups[-1][-1] if groups else None
        if (last is not None and last.provenance.source == fr.provenance.source and last.rank == fr.rank
                and (fr.provenance.line or 0) - (last.provenance.line or 0) <= FRAME_GAP):
            groups[-1].append(fr)
        else:
            groups.append([fr])
    return groups


def _has_exception_after(ctx: Context, frame: Any) -> bool:
    line = frame.provenance.line or 0
    return any(e.provenance.source == frame.provenance.source and e.rank == frame.rank
               and 0 < (e.provenance.line or 0) - line <= FRAME_GAP
               for e in ctx.lines("python_exception*"))
