"""The one merger of evidence bundles, and the one world-size fact.

Bundles come from the nodes of the Slurm fan-out (``hang --local``) and from the hook's per-rank
reports (``diagnose report``); both are merged here, and the engine then runs once on the result.
What a rank without evidence means is the caller's to say (a node that failed, a rank that did not fail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from diagnose.evidence import parse_evidence
from diagnose.output.report import Skipped

QUIET = ("missing", "no_evidence")


@dataclass
class Merged:
    """Evidence, skipped sources and notes of several bundles, with the ranks they cover."""

    evidence: list[Any] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    world_size: int | None = None

    def unseen(self) -> list[int]:
        """Ranks below the world size that no bundle has evidence of."""
        return sorted(r for r in range(self.world_size or 0) if r not in self.seen)


def world_size(evidence: Iterable[Any], declared: Iterable[Any] = ()) -> int | None:
    """The world size the evidence states: torch.distributed's or WORLD_SIZE in a rank's environment,
    the members of the default process group, or what a bundle's writer declared; the largest."""
    sizes: list[int] = [d for d in declared if isinstance(d, int) and not isinstance(d, bool) and d > 0]
    for item in evidence:
        if item.kind == "rank_env":
            sizes += [int(v) for key in ("dist.world_size", "WORLD_SIZE")
                      if (v := str(item.variables.get(key, ""))).isdigit()]
        elif item.kind == "process_group" and item.id == "0":
            sizes.append(len(item.members))
    return max(sizes) if sizes else None


def merge(bundles: Mapping[str, Mapping[str, Any]], *, ranks: Mapping[str, int] | None = None,
          label_notes: bool = True) -> Merged:
    """One evidence list from bundles named by their source (a node, a report file).

    ``ranks`` gives the rank of a bundle whose records carry none (a per-rank report). A bad record
    is skipped with its reason. A rank's missing/no_evidence status is dropped where another bundle
    has evidence of it, and kept once otherwise (missing wins).
    """
    out = Merged()
    for label, bundle in bundles.items():
        for idx, record in enumerate(bundle.get("evidence") or []):
            try:
                item = parse_evidence([record])[0]
            except Exception as exc:  # a malformed record is one skip, never the end of the merge
                out.skipped.append(Skipped(source=f"{label}#evidence[{idx}]", reason=str(exc).splitlines()[0][:200]))
                continue
            if item.rank is None and ranks and label in ranks:
                item = item.model_copy(update={"rank": ranks[label]})
            out.evidence.append(item)
        out.skipped += [s if isinstance(s, Skipped) else Skipped(**s) for s in bundle.get("skipped") or []]
        out.notes += [f"{label}: {n}" if label_notes else n for n in bundle.get("notes") or []]
    out.seen = {e.rank for e in out.evidence if e.rank is not None
                and not (e.kind == "rank_status" and e.status in QUIET)}
    best: dict[int | None, Any] = {}
    for e in out.evidence:
        if e.kind == "rank_status" and e.status in QUIET and e.rank not in out.seen and (
                e.rank not in best or (e.status == "missing" and best[e.rank].status != "missing")):
            best[e.rank] = e
    out.evidence = [e for e in out.evidence if not (e.kind == "rank_status" and e.status in QUIET)
                    or best.get(e.rank) is e]
    out.world_size = world_size(out.evidence, (b.get("world_size") for b in bundles.values()))
    return out
