"""Code tables (`rules/tables/*.yaml`): a status or error code -> its name, meaning and likely cause.

A table is data with its `origin:` (where the codes are defined). Rules look codes up through
`code_in_table`: a line's field (``12``, ``status=12``, ``IBV_WC_RETRY_EXC_ERR(12)``,
``ncclSystemError``) names an entry, and the entry's cause decides which outcome holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diagnose.context import Context
from diagnose.errors import RuleError, RuleLocation
from diagnose.predicates.base import Binding, predicate, ranks_of
from diagnose.vocab import CAUSES
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines


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


class Table(BaseModel):
    """A code table as written in rules/tables/<table>.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    table: str
    description: str
    origin: tuple[str, ...] = Field(min_length=1)
    codes: dict[int, TableEntry]

    @field_validator("origin", mode="before")
    @classmethod
    def _origin_list(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

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
        code, entry = found
        fields_out = {"code": code, "code_name": entry.name, "meaning": entry.meaning or entry.text or entry.name,
                      "alternatives": ", ".join(entry.alternatives)}
    return Binding(ranks_of(hits), tuple(hits[:20]), {**fields_out, "count": len(hits)})
