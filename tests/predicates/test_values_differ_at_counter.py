"""values_differ_at_counter: processes that logged different values at the same per-process counter.

Meant for NCCL_DEBUG_SUBSYS=COLL consoles (NVIDIA/nccl:src/enqueue.cc: `%s: opCount %lx ... [nranks=%d]`): the
signature that fed it from the log scan was withdrawn in session 12 because a hit on every enqueued collective made the
512 MB scan benchmark 130x a plain read; a reader of those lines must not cost Python time per line.
"""

from __future__ import annotations

from diagnose.context import Context
from diagnose.evidence import LogLine, Provenance
from diagnose.predicates.sequences import values_differ_at_counter

ARGS = {"signature": "coll", "fields": ["op"], "counter": "n", "by": ["pid"], "group_by": ["size"]}


def _line(no: int, pid: int | None, op: str, n: str, size: int = 4, rank: int | None = None) -> LogLine:
    fields = {"op": op, "n": n, "size": size, **({"pid": pid} if pid is not None else {})}
    return LogLine(
        signature="coll",
        text=op,
        fields=fields,
        rank=rank,
        provenance=Provenance(probe="logs", source="console.log", line=no),
    )


def test_the_minority_at_a_counter_is_the_odd_one() -> None:
    lines = [
        _line(1, 1, "AllReduce", "5"),
        _line(2, 2, "AllReduce", "5"),
        _line(3, 3, "Broadcast", "5", rank=2),
    ]
    found = values_differ_at_counter(Context(lines), **ARGS)
    assert found is not None and found.ranks == frozenset({2})
    assert found.fields["at"] == "size 4, n 5" and found.fields["odd"] == "rank 2 pid 3"
    assert "op AllReduce (2 of 3)" in found.fields["values"]


def test_a_tie_names_no_odd_one_and_agreement_is_quiet() -> None:
    tie = values_differ_at_counter(
        Context([_line(1, 1, "AllReduce", "5"), _line(2, 2, "AllGather", "5")]), **ARGS
    )
    assert tie is not None and tie.ranks == frozenset() and tie.fields["odd"] == ""
    assert (
        values_differ_at_counter(
            Context([_line(1, 1, "AllReduce", "5"), _line(2, 2, "AllReduce", "5")]), **ARGS
        )
        is None
    )


def test_a_counter_that_stands_still_or_another_stream_is_not_compared() -> None:
    still = [_line(1, 1, "AllReduce", "0"), _line(2, 1, "AllGather", "0"), _line(3, 2, "AllGather", "0")]
    assert values_differ_at_counter(Context(still), **ARGS) is None
    sizes = [_line(1, 1, "AllReduce", "5", size=8), _line(2, 2, "AllGather", "5", size=2)]
    assert values_differ_at_counter(Context(sizes), **ARGS) is None


def test_without_the_by_fields_ranks_tell_processes_apart() -> None:
    lines = [
        _line(1, None, "AllReduce", "5", rank=0),
        _line(2, None, "AllReduce", "5", rank=1),
        _line(3, None, "Reduce", "5", rank=2),
    ]
    assert values_differ_at_counter(Context(lines), **ARGS).ranks == frozenset({2})
