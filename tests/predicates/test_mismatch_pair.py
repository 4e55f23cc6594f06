"""A desync report that names no peer rank must still diagnose (it crashed the engine with min() of nothing)."""

from __future__ import annotations

from diagnose.context import Context
from diagnose.evidence import LogLine, Provenance
from diagnose.predicates.logs import mismatch_pair

# From Lightning-AI/pytorch-lightning#19106 (tests/heldout/pl-19106-log-dict-different-keys): each rank
# reports only itself, "Rank 1 is running inconsistent collective: CollectiveFingerPrint(OpType=ALLGATHER...".
TEXT = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running inconsistent "
        "collective: CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[1], TensorDtypes=Float)")


def _line(rank: int, **fields) -> LogLine:
    return LogLine(signature="collective_fingerprint_mismatch", text=TEXT, fields=fields, rank=rank,
                   provenance=Provenance(probe="logs", source="console.log", line=rank + 1))


def test_mismatch_without_a_named_peer_binds_no_culprit() -> None:
    found = mismatch_pair(Context([_line(0), _line(1)]))
    assert found is not None and found.ranks == frozenset()
    assert len(found.evidence) == 2


def test_the_peer_named_by_the_reporters_is_the_culprit() -> None:
    found = mismatch_pair(Context([_line(0, rank_a=0, rank_b=3), _line(1, rank_a=1, rank_b=3)]))
    assert found.ranks == frozenset({3})
