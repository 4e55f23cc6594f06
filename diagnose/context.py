"""Evidence indexed for rule evaluation: by kind, by signature, by rank (built once per run)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any


class Context:
    """Read-only indexes over one run's evidence; predicates query it, never scan raw lists twice."""

    def __init__(self, evidence: Iterable[Any]) -> None:
        self.evidence = list(evidence)
        self._by_kind: dict[str, list[Any]] = defaultdict(list)
        self._by_signature: dict[str, list[Any]] = defaultdict(list)
        self._at: dict[tuple[str | None, int], set[str]] = defaultdict(set)
        self._text: dict[str, set[str]] = defaultdict(set)
        for item in self.evidence:
            self._by_kind[item.kind].append(item)
            if item.kind == "log_line":
                self._by_signature[item.signature].append(item)
                if item.provenance.line is not None:
                    self._at[(item.provenance.source, item.provenance.line)].add(item.signature)
                if item.text:
                    self._text[item.text.strip()].add(item.signature)

    def of(self, kind: str) -> list[Any]:
        """Evidence of one kind."""
        return self._by_kind.get(kind, [])

    def lines(self, signature: str) -> list[Any]:
        """Log lines of one signature; a name with ``*`` is a family glob (``nccl_ib_*``)."""
        if "*" not in signature:
            return self._by_signature.get(signature, [])
        return [line for name, found in self._by_signature.items()
                if fnmatchcase(name, signature) for line in found]

    def signatures_of(self, item: Any) -> set[str]:
        """Every signature that matched the line of ``item`` (by source and line, or by its text)."""
        found = set(self._at.get((item.provenance.source, item.provenance.line), ()))
        if item.text:
            found |= self._text.get(item.text.strip(), set())
        return found

    def kinds(self) -> frozenset[str]:
        return frozenset(k for k, v in self._by_kind.items() if v)

    def ranks_seen(self) -> set[int]:
        """Ranks that left any evidence (a rank_status of missing/no_evidence does not count)."""
        out = set()
        for item in self.evidence:
            if item.rank is None:
                continue
            if item.kind == "rank_status" and item.status in ("missing", "no_evidence"):
                continue
            out.add(item.rank)
        return out

    def world_size_hint(self) -> int | None:
        """World size as the evidence states it (env, launcher banners, process group members)."""
        sizes = []
        for env in self.of("rank_env"):
            value = env.variables.get("WORLD_SIZE")
            if value and value.isdigit():
                sizes.append(int(value))
            value = env.variables.get("dist.world_size")
            if value and value.isdigit():
                sizes.append(int(value))
        for line in [*self.lines("store_clients_missing"), *self.lines("store_based_barrier_waiting")]:
            if isinstance(line.fields.get("expected"), int):
                sizes.append(line.fields["expected"])
        for line in self.lines("ddp_member_banner"):
            if isinstance(line.fields.get("world_size"), int):
                sizes.append(line.fields["world_size"])
        for pg in self.of("process_group"):  # the default group holds every rank; subgroups fewer
            if pg.members:
                sizes.append(max(pg.members) + 1)
        return max(sizes) if sizes else None

    def group_initialized(self) -> bool:
        """Some rank got past process-group init (so every rank arrived at rendezvous)."""
        if self.of("process_group") or any(c.state != "timed_out" or c.seq for c in self.of("collective_state")):
            return True
        return any("dist.world_size" in env.variables for env in self.of("rank_env"))
