"""The signature catalog stays harvested from the sources: size, origins, breadth."""

from __future__ import annotations

from collections import Counter

from diagnose.probes.logs.signatures import load_signatures


def _source(origin: str) -> str:
    return origin.split("/")[2] if origin.startswith("http") else origin.split(":")[0]


def test_catalog_is_large_cited_and_broad() -> None:
    sigs = load_signatures().signatures
    cited = [s for s in sigs if s.origin]
    per_source = Counter(src for s in cited for src in {_source(o) for o in s.origin})
    broad = sorted(k for k, v in per_source.items() if v >= 10)
    assert len(sigs) >= 600, len(sigs)
    assert len(cited) >= 0.9 * len(sigs), f"{len(cited)} of {len(sigs)} have an origin"
    assert len(broad) >= 10, per_source.most_common(12)
