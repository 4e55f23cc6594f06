"""What a predicate is: a pure function of the evidence returning a `Binding`, marked with what it reads.

The `predicate` decorator only marks a function; `diagnose.predicates` builds the registry
explicitly from its modules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from diagnose.ranks import format_ranks


@dataclass(frozen=True)
class Binding:
    """What a predicate found: culprit candidates, cited evidence, and fields for messages."""

    ranks: frozenset[int] = frozenset()
    evidence: tuple[Any, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)

    def value(self, name: str) -> Any:
        if name == "ranks":
            return format_ranks(self.ranks)
        if name == "count":
            return self.fields.get("count", len(self.evidence))
        return self.fields.get(name, "?")


@dataclass(frozen=True)
class PredicateInfo:
    func: Callable[..., Binding | None]
    binds: frozenset[str]
    kinds: frozenset[str]


def predicate(*, binds: Iterable[str] = (), kinds: Iterable[str] = ()) -> Callable[..., Any]:
    """Mark a predicate with the fields it binds and the evidence kinds it reads."""
    def wrap(func: Callable[..., Binding | None]) -> Callable[..., Binding | None]:
        func.__predicate__ = PredicateInfo(func, frozenset(binds) | {"ranks", "count"}, frozenset(kinds))  # type: ignore[attr-defined]
        return func
    return wrap


def collect(module: Any) -> dict[str, PredicateInfo]:
    """The predicates a module defines, by function name."""
    return {name: obj.__predicate__ for name, obj in vars(module).items()
            if callable(obj) and hasattr(obj, "__predicate__") and obj.__module__ == module.__name__}


def ranks_of(items: Iterable[Any]) -> frozenset[int]:
    """Ranks of the evidence items that name one."""
    return frozenset(e.rank for e in items if e.rank is not None)


def bind(evidence: Sequence[Any], **fields: Any) -> Binding:
    """A binding that cites ``evidence`` (its ranks become the culprit candidates) with message fields."""
    return Binding(frozenset(e.rank for e in evidence if getattr(e, "rank", None) is not None), tuple(evidence), fields)


def by_source(ctx: Any, kind: str) -> dict[str | None, list[Any]]:
    """The evidence of ``kind``, grouped by the file it came from."""
    out: dict[str | None, list[Any]] = defaultdict(list)
    for e in ctx.of(kind):
        out[e.provenance.source].append(e)
    return out


def parse_rank_list(text: Any) -> frozenset[int]:
    """``"1, 3"`` -> {1, 3}."""
    return frozenset(int(t) for t in str(text).replace(" ", "").split(",") if t.isdigit())
