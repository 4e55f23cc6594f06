"""Cross-rank facts derived from log lines: how ranks ended, where each stood in its collectives.

torchrun's failure table is split over several lines; it is reassembled per file.
Watchdog lines become CollectiveState records so rules can compare sequence numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import Any

from diagnose.evidence import CollectiveState, Provenance, RankExit, expand_ranks
from diagnose.ranks import SIGNAL_NAMES

USES_SIGNATURES = frozenset({
    "torchrun_failure_rank", "torchrun_failure_exitcode", "torchrun_failure_error_file", "torchrun_failure_traceback",
    "torchrun_root_cause_header", "torchrun_other_failures_header", "torchrun_worker_failed",
    "launcher_subprocess_exit", "mp_spawn_process_exit", "lightning_child_process_exit", "srun_task_exit", "nccl_watchdog_work_status",
    "nccl_watchdog_timeout", "gloo_recv_timeout", "nccl_watchdog_native_frame", "elastic_process_failure_repr",
})
_TABLE = ("torchrun_failure_rank", "torchrun_failure_exitcode", "torchrun_failure_error_file",
          "torchrun_failure_traceback", "torchrun_root_cause_header", "torchrun_other_failures_header")


def derive(evidence: Iterable[Any]) -> list[Any]:
    """New evidence records implied by the given ones (never duplicates of existing kinds)."""
    items = list(evidence)
    lines = [e for e in items if e.kind == "log_line"]
    out: list[Any] = []
    out += _failure_table_exits(lines)
    if not any(e.kind == "rank_exit" for e in out):
        out += _launcher_exits(lines)
    if not any(e.kind == "rank_exit" for e in [*items, *out]):
        out += _srun_exits(lines)
    out += _watchdog_states(lines)
    return out


def _failure_table_exits(lines: list[Any]) -> list[RankExit]:
    table = sorted((e for e in lines if e.signature in _TABLE),
                   key=lambda e: (e.provenance.source or "", e.provenance.line or 0))
    exits: dict[int, RankExit] = {}
    for _source, group in groupby(table, key=lambda e: e.provenance.source):
        root = False
        current: dict[str, Any] | None = None
        for e in group:
            if e.signature == "torchrun_root_cause_header":
                root = True
                continue
            if e.signature == "torchrun_other_failures_header":
                root = False
                continue
            if e.signature == "torchrun_failure_rank":
                if current:
                    _keep(exits, current)
                current = {"rank": e.fields.get("rank"), "root": root, "line": e}
            elif current is not None:
                current.update({k: v for k, v in e.fields.items() if k not in ("rank", "local_rank")})
                current.setdefault("lines", []).append(e)
        if current:
            _keep(exits, current)
    return list(exits.values())


def _keep(exits: dict[int, RankExit], entry: dict[str, Any]) -> None:
    rank = entry.get("rank")
    if not isinstance(rank, int):
        return
    code = entry.get("exitcode")
    sig = entry.get("signal") or (SIGNAL_NAMES.get(-code) if isinstance(code, int) and code < 0 else None)
    error_file = entry.get("error_file")
    first = entry["line"]
    lines = [first, *entry.get("lines", [])]
    record = RankExit(
        rank=rank, exitcode=code if isinstance(code, int) else None, signal=sig,
        error_file=None if error_file is None else error_file not in ("<N/A>", "N/A"),
        root_cause=bool(entry.get("root")), time=first.time,
        text=" | ".join(line.text.strip() for line in lines if line.text)[:400],
        provenance=Provenance(probe="logs", source=first.provenance.source, line=first.provenance.line))
    previous = exits.get(rank)
    if previous is None or (record.root_cause and not previous.root_cause):
        exits[rank] = record


def _launcher_exits(lines: list[Any]) -> list[RankExit]:
    out: dict[int, RankExit] = {}
    for e in lines:
        if e.signature not in ("torchrun_worker_failed", "launcher_subprocess_exit", "mp_spawn_process_exit",
                               "lightning_child_process_exit", "elastic_process_failure_repr"):
            continue
        code = e.fields.get("exitcode")
        rank = e.fields.get("local_rank", e.fields.get("rank", e.rank))
        if not isinstance(rank, int):
            rank = 0 if e.signature in ("launcher_subprocess_exit", "lightning_child_process_exit") else None
        if not isinstance(code, int) or rank is None or rank in out:
            continue
        out[rank] = RankExit(rank=rank, exitcode=code, signal=SIGNAL_NAMES.get(-code) if code < 0 else None,
                             text=e.text, time=e.time, provenance=e.provenance)
    for e in lines:  # mp.spawn names a signal instead of a negative code
        if e.signature == "mp_spawn_process_exit" and isinstance(e.fields.get("rank"), int) and e.fields.get("signal"):
            out.setdefault(e.fields["rank"], RankExit(rank=e.fields["rank"], signal=e.fields["signal"], text=e.text,
                                                      time=e.time, provenance=e.provenance))
    return list(out.values())


_SRUN_SIGNAL = {"Killed": "SIGKILL", "Terminated": "SIGTERM", "Segmentation fault": "SIGSEGV",
                "Aborted": "SIGABRT", "Bus error": "SIGBUS", "Out Of Memory": "SIGKILL"}


def _srun_exits(lines: list[Any]) -> list[RankExit]:
    """How srun-launched tasks ended; with srun as the launcher the task id is the rank."""
    out: dict[int, RankExit] = {}
    for e in lines:
        if e.signature != "srun_task_exit":
            continue
        try:
            tasks = expand_ranks(str(e.fields.get("tasks", "")))
        except ValueError:
            continue
        sig = _SRUN_SIGNAL.get(str(e.fields.get("how", "")))
        code = e.fields.get("exitcode")
        for rank in tasks:
            out.setdefault(rank, RankExit(rank=rank, exitcode=code if isinstance(code, int) else None, signal=sig,
                                          text=e.text, time=e.time, provenance=e.provenance))
    return list(out.values())


def _watchdog_states(lines: list[Any]) -> list[CollectiveState]:
    status: dict[tuple[int | None, int | None], Any] = {}
    for e in lines:
        if e.signature == "nccl_watchdog_work_status":
            status[(e.rank, e.fields.get("seq"))] = e
    out: dict[tuple[int | None, Any], CollectiveState] = {}
    for e in lines:
        if e.signature not in ("nccl_watchdog_timeout", "gloo_recv_timeout", "nccl_watchdog_native_frame"):
            continue
        seq = e.fields.get("seq")
        key = (e.rank, seq)
        if key in out:
            continue
        st = status.get(key)
        numel = e.fields.get("numel_in")
        out[key] = CollectiveState(
            rank=e.rank, op=_op_name(e.fields.get("op")), seq=seq if isinstance(seq, int) else None,
            process_group=str(e.fields.get("pg") or "0"),
            state="timed_out", shape=str(numel) if numel is not None else None,
            last_enqueued=st.fields.get("last_enqueued") if st else None,
            last_completed=st.fields.get("last_completed") if st else None,
            text=e.text, time=e.time, provenance=e.provenance)
    for (rank, seq), st in status.items():
        if (rank, seq) not in out:
            out[(rank, seq)] = CollectiveState(
                rank=rank, seq=seq if isinstance(seq, int) else None, state="timed_out",
                last_enqueued=st.fields.get("last_enqueued"), last_completed=st.fields.get("last_completed"),
                text=st.text, time=st.time, provenance=st.provenance)
    return list(out.values())


def _op_name(op: Any) -> str | None:
    if not op:
        return None
    text = str(op).lower().lstrip("_")
    return {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
            "alltoall": "all_to_all"}.get(text.replace("_", ""), text)
