"""Evidence indexed for rule evaluation: by kind, by signature, by rank (built once per run)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Any

from diagnose.ranks import MAX_WORLD_SIZE, plausible_world

USES_SIGNATURES = frozenset({"store_clients_missing", "store_based_barrier_waiting", "ddp_member_banner"})


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
        """World size as the evidence states it (env, launcher banners, process group members).

        Only plausible sizes count (``ranks.plausible_world``); the others are in ``world_notes``."""
        return self._world[0]

    def world_size(self) -> int | None:
        """The run's world size, the one fact every report part uses: as stated, else one more than
        the highest rank seen when several ranks were seen (never an implausible number)."""
        stated = self._world[0]
        if stated is not None:
            return stated
        seen = self.ranks_seen()
        if len(seen) > 1 and plausible_world(max(seen) + 1):
            return max(seen) + 1
        return None

    def world_notes(self) -> list[str]:
        """Why a number in the evidence was not taken as the world size."""
        notes = list(self._world[1])
        seen = self.ranks_seen()
        if self._world[0] is None and len(seen) > 1 and not plausible_world(max(seen) + 1):
            notes.append(f"rank {max(seen)} is beyond any real world size (over {MAX_WORLD_SIZE} ranks): "
                         "world size not inferred from the ranks seen")
        return notes

    @cached_property
    def _world(self) -> tuple[int | None, tuple[str, ...]]:
        sizes: list[tuple[int, str]] = []
        for env in self.of("rank_env"):
            for key in ("WORLD_SIZE", "dist.world_size"):
                value = env.variables.get(key)
                if value and value.isdigit() and len(value) < 20:
                    sizes.append((int(value), key))
        for line in [*self.lines("store_clients_missing"), *self.lines("store_based_barrier_waiting")]:
            if isinstance(line.fields.get("expected"), int):
                sizes.append((line.fields["expected"], line.signature))
        for line in self.lines("ddp_member_banner"):
            if isinstance(line.fields.get("world_size"), int):
                sizes.append((line.fields["world_size"], line.signature))
        for pg in self.of("process_group"):  # the default group holds every rank; subgroups fewer
            if pg.members:
                sizes.append((max(pg.members) + 1, f"process group {pg.id}"))
        good = [n for n, _ in sizes if plausible_world(n)]
        bad: dict[int, str] = {}
        for n, where in sizes:
            if not plausible_world(n) and n > 0:
                bad.setdefault(n, where)
        notes = tuple(f"implausible world size {n} ({where}) ignored: over {MAX_WORLD_SIZE} ranks"
                      for n, where in sorted(bad.items())[:5])
        return (max(good) if good else None), notes

    def group_initialized(self) -> bool:
        """Some rank got past process-group init (so every rank arrived at rendezvous)."""
        if self.of("process_group") or any(c.state != "timed_out" or c.seq for c in self.of("collective_state")):
            return True
        return any("dist.world_size" in env.variables for env in self.of("rank_env"))
