"""Unit tests of the live-stack predicates (diagnose/predicates/stacks.py), through a Context of typed evidence."""

from __future__ import annotations

from diagnose.context import Context
from diagnose.evidence import Provenance, RankEnv, RankStatus, StackSample
from diagnose.predicates import stacks as P

C10D = "all_reduce (torch/distributed/distributed_c10d.py:3252)"


def _s(rank: int, activity: str, *frames: str, op: str | None = None, sample: int = 1, **more) -> StackSample:
    return StackSample(rank=rank, activity=activity, op=op, frames=frames, sample=sample,
                       call_site=frames[-1].split("(")[-1].rstrip(")") if frames else None,
                       provenance=Provenance(probe="stacks", pid=100 + rank), **more)


def _waiters(*ranks: int, line: int = 40) -> list[StackSample]:
    return [_s(r, "collective", C10D, f"step (train.py:{line})", "<module> (train.py:60)", op="all_reduce")
            for r in ranks]


def test_rank_before_the_collective_is_coming_not_skipped() -> None:
    ctx = Context([*_waiters(0, 2), _s(1, "sleeping", "step (train.py:38)", "<module> (train.py:60)")])
    coming = P.rank_elsewhere_while_others_wait(ctx, ["user_code", "sleeping"], position="coming")
    assert coming is not None and coming.ranks == {1}
    assert coming.fields["frame"] == "step (train.py:38)" and coming.fields["waiting"] == "0,2"
    assert P.rank_elsewhere_while_others_wait(ctx, ["user_code", "sleeping"], position="skipped") is None


def test_rank_past_the_collective_is_skipped() -> None:
    ctx = Context([*_waiters(0, 2), _s(1, "sleeping", "step (train.py:43)", "<module> (train.py:60)")])
    skipped = P.rank_elsewhere_while_others_wait(ctx, ["user_code", "sleeping"], position="skipped")
    assert skipped is not None and skipped.ranks == {1} and skipped.fields["place"] == "all_reduce"
    assert P.rank_elsewhere_while_others_wait(ctx, ["user_code", "sleeping"], position="coming") is None


def test_moving_rank_is_coming_whatever_its_line() -> None:
    odd = [_s(1, "user_code", "work (train.py:90)", sample=0, counters={"work.n": 1}),
           _s(1, "user_code", "work (train.py:90)", sample=1, counters={"work.n": 5000})]
    ctx = Context([*_waiters(0, 2), *odd])
    assert P.rank_elsewhere_while_others_wait(ctx, ["user_code"], position="coming").ranks == {1}


def test_waiters_that_progress_are_not_waiting() -> None:
    moving = [_s(r, "collective", C10D, "step (train.py:40)", op="all_reduce", sample=i, counters={"step.i": i})
              for r in (0, 2) for i in (0, 1)]
    ctx = Context([*moving, _s(1, "user_code", "step (train.py:30)")])
    assert P.rank_elsewhere_while_others_wait(ctx, ["user_code"]) is None
    assert P.all_ranks_wait_together(Context(moving)) is None


def test_all_ranks_wait_together_binds_no_rank() -> None:
    b = P.all_ranks_wait_together(Context(_waiters(0, 1, 2)))
    assert b is not None and b.ranks == frozenset() and b.fields["waiting"] == "0-2"


def test_rank_in_other_collective() -> None:
    odd = _s(1, "collective", "broadcast (torch/distributed/distributed_c10d.py:2700)", "step (train.py:41)",
             op="broadcast")
    b = P.rank_in_other_collective(Context([*_waiters(0, 2, 3), odd]))
    assert b is not None and b.ranks == {1} and b.fields["where"] == "broadcast"


def test_rank_gone_and_missing_at_rendezvous() -> None:
    gone = RankStatus(rank=1, status="missing", provenance=Provenance(probe="procstate"))
    b = P.rank_gone_while_others_wait(Context([*_waiters(0, 2), gone]))
    assert b is not None and b.ranks == {1} and b.fields["gone"] == "1"
    rdzv = [_s(r, "rendezvous", "_store_based_barrier (torch/distributed/distributed_c10d.py:2169)") for r in (0, 2)]
    m = P.ranks_missing_at_rendezvous(Context([*rdzv, gone]))
    assert m is not None and m.ranks == {1} and m.fields["waiting"] == "0,2"


def test_out_of_batches_and_batch_positions() -> None:
    stepping = [_s(0, "backward", "backward (torch/_tensor.py:520)", "train (train.py:20)", batch=4)]
    done = [_s(1, "barrier", "barrier (torch/distributed/distributed_c10d.py:5356)", "train (train.py:25)",
               op="barrier", batch=3)]
    ctx = Context(stepping + done)
    b = P.rank_out_of_batches(ctx)
    assert b is not None and b.ranks == {1} and b.fields["batches"] == "rank 0 at 4, rank 1 at 3"
    assert P.batch_positions_differ(ctx).ranks == {1}


def test_env_conflict_duplicate_rank() -> None:
    envs = [RankEnv(rank=0, variables={"RANK": "0", "WORLD_SIZE": "2"}, provenance=Provenance(pid=p))
            for p in (10, 11)]
    b = P.env_conflict(Context(envs), ["duplicate_rank"])
    assert b is not None and b.ranks == {0} and "RANK=0 is set in 2 processes" in b.fields["conflict"]


def test_rank_before_the_call_whose_block_continues_skips_it() -> None:
    odd = _s(1, "sleeping", "step (train.py:38)", "<module> (train.py:60)", exits={"train.py:38": 39})
    ctx = Context([*_waiters(0, 2), odd])
    assert P.rank_elsewhere_while_others_wait(ctx, ["sleeping"], position="skipped").ranks == {1}
    late_exit = _s(1, "sleeping", "step (train.py:38)", "<module> (train.py:60)", exits={"train.py:38": 45})
    assert P.rank_elsewhere_while_others_wait(Context([*_waiters(0, 2), late_exit]), ["sleeping"],
                                              position="coming").ranks == {1}  # the return comes after the call
