"""values_differ_at_counter: processes that logged different values at the same per-process counter.

The end-to-end fixtures are NCCL_DEBUG_SUBSYS=COLL consoles in the text of NVIDIA/nccl:src/enqueue.cc
(`%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p`) behind
NCCL's own prefix (src/debug.cc: `%s:%d:%d [%d] NCCL INFO `, host, pid, tid, cudaDev).
"""

from __future__ import annotations

from pathlib import Path

from diagnose.commands.logs import run_logs
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


def _console(odd: bool, steps: int = 600) -> str:
    """4 processes of one node log `steps` all-reduces; with ``odd`` pid 2720 broadcasts at the last opCount."""
    out = []
    for oc in range(steps):
        for dev, pid in enumerate((2718, 2719, 2720, 2721)):
            op, count = (
                ("Broadcast", 1) if odd and oc == steps - 1 and pid == 2720 else ("AllReduce", 9984512)
            )
            out.append(
                f"node-a:{pid}:{pid} [{dev}] NCCL INFO {op}: opCount {oc:x} sendbuff 0x7f1c6e000000 "
                f"recvbuff 0x7f1c6e000000 count {count} datatype 7 op 0 root 0 comm 0x55bef020137{dev} "
                f"[nranks=4] stream 0x55bef01a7a40"
            )
    return "\n".join(out) + "\n"


def test_nccl_coll_console_with_one_process_in_another_collective(tmp_path: Path) -> None:
    """The mismatch is at the end of a long log (past the lines kept from its start)."""
    (tmp_path / "console.log").write_text(_console(odd=True))
    top = run_logs([tmp_path]).causes[0]
    assert top.id == "collective_mismatch" and top.confidence == "high"
    assert (
        "opcount 257" in top.summary and "pid 2720" in top.summary and "op Broadcast count 1" in top.summary
    )


def test_nccl_coll_console_where_every_process_agrees_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(_console(odd=False))
    assert "collective_mismatch" not in [c.id for c in run_logs([tmp_path]).causes]
