"""Predicates over what a report mentions (Mention evidence, ``rules/artifacts/mentions.yaml``)."""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate


@predicate(binds=("component", "words"), kinds=("mention",))
def mentioned(ctx: Context, components: Sequence[str], where: str | None = None) -> Binding | None:
    """The report mentions one of the ``components`` (in a sentence or a command, code or config line; only in
    one of them with ``where``: prose or code). Names no culprit rank: a mention is about the run, not a rank."""
    hits = [m for m in ctx.of("mention") if m.component in components and (where is None or m.where == where)]
    if not hits:
        return None
    words = ", ".join(dict.fromkeys(f"'{m.words}'" for m in hits))
    return Binding(
        frozenset(),
        tuple(hits[:6]),
        {"component": hits[0].component, "words": words[:160], "count": len(hits)},
    )
