"""Predicates over the pre-launch checks of `diagnose preflight` (HostCheck evidence)."""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate


@predicate(binds=("check", "detail", "value", "limit", "hosts"), kinds=("host_check",))
def host_check(ctx: Context, checks: Sequence[str], status: str = "fail") -> Binding | None:
    """One of the named pre-launch checks has this status (``fail`` by default), on any host."""
    hits = [c for c in ctx.of("host_check") if c.name in checks and c.status == status]
    if not hits:
        return None
    hosts = sorted({c.provenance.host for c in hits if c.provenance.host})
    several = len(hosts) > 1
    detail = "; ".join(dict.fromkeys(f"{c.provenance.host}: {c.detail}" if several else c.detail or c.name
                                     for c in hits[:5]))
    first = hits[0]
    return Binding(frozenset(), tuple(hits[:20]), {"check": first.name, "detail": detail, "value": first.value,
                                                   "limit": first.limit, "hosts": ", ".join(hosts) or "this host",
                                                   "count": len(hits)})
