"""Unit tests of the log predicates: evidence built from the models, called through a Context."""

from __future__ import annotations

from diagnose.context import Context
from diagnose.evidence import LogLine, Provenance, RankExit
from diagnose.predicates import REGISTRY

PEER_FAILURES = ("DistBackendError", "ChildFailedError")


def _call(name: str, evidence: list, **params):
    return REGISTRY[name].func(Context(evidence), **params)


def _exc(text: str, rank: int | None = None, line: int = 10, **fields) -> LogLine:
    kind, _, message = text.partition(": ")
    return LogLine(signature="python_exception", rank=rank, text=text,
                   fields={"exc_type": kind, "message": message, **fields},
                   provenance=Provenance(probe="logs", source="console.log", line=line))


def test_unranked_exception_counts_only_when_asked() -> None:
    ev = [_exc("ZeroDivisionError: division by zero", frame_path="/home/u/train.py", frame_line=3)]
    assert _call("ranks_with_own_error", ev) is None
    b = _call("ranks_with_own_error", ev, include_unranked=True)
    assert b is not None and b.ranks == frozenset()
    assert (b.fields["exc_type"], b.fields["where"]) == ("ZeroDivisionError", "/home/u/train.py:3")
    assert _call("ranks_with_own_error", [_exc("ValueError: x", rank=2)], unranked_only=True) is None


def test_user_frames_only_rejects_library_frames() -> None:
    lib = _exc("KeyError: 'a'", frame_path="/venv/lib/python3.11/site-packages/pkg/cfg.py", frame_line=9)
    own = _exc("KeyError: 'b'", line=20, frame_path="/work/job/train.py", frame_line=4)
    b = _call("ranks_with_own_error", [lib, own], include_unranked=True, types=["KeyError"],
              user_frames_only=["site-packages", "/lib/python"])
    assert b is not None and b.evidence == (own,)
    assert _call("ranks_with_own_error", [lib], include_unranked=True, user_frames_only=["site-packages"]) is None


def test_unranked_traceback_belongs_to_the_one_rank_that_failed_by_itself() -> None:
    ev = [_exc("ValueError: bad batch"),
          RankExit(rank=1, exitcode=-6, signal="SIGABRT"), RankExit(rank=0, exitcode=-15, signal="SIGTERM")]
    b = _call("exited_after_raising", ev, signals=["SIGABRT"], ignore_types=PEER_FAILURES)
    assert b is not None and b.ranks == frozenset({1})
    assert (b.fields["exc_type"], b.fields["signal"]) == ("ValueError", "SIGABRT")
    assert b.evidence[0].text == "ValueError: bad batch"
    killed = _call("rank_exited", ev, signals=["SIGABRT"], unless_raised=True, raised_ignore_types=PEER_FAILURES)
    assert killed is None


def test_two_failed_ranks_leave_an_unranked_traceback_unattributed() -> None:
    ev = [_exc("ValueError: bad batch"), RankExit(rank=1, exitcode=-6), RankExit(rank=2, exitcode=-6)]
    assert _call("exited_after_raising", ev, signals=["SIGABRT"]) is None
    b = _call("rank_exited", ev, signals=["SIGABRT"], unless_raised=True)
    assert b is not None and b.ranks == frozenset({1, 2})


def test_peer_failure_exceptions_do_not_make_a_rank_the_culprit() -> None:
    ev = [_exc("torch.distributed.DistBackendError: peer gone", rank=0), RankExit(rank=0, exitcode=-6)]
    assert _call("exited_after_raising", ev, ignore_types=PEER_FAILURES) is None


def test_repr_and_type_last_forms_count_as_exceptions() -> None:
    repr_line = LogLine(signature="python_exception_repr", rank=3, text="ValueError('x')",
                        fields={"exc_type": "ValueError", "message": "'x'"})
    b = _call("ranks_with_own_error", [repr_line])
    assert b is not None and b.ranks == frozenset({3})


def _step(signature: str, step: int | None, line: int, rank: int | None = 0) -> LogLine:
    return LogLine(signature=signature, rank=rank, text=signature, fields={} if step is None else {"step": step},
                   provenance=Provenance(probe="logs", source="train.log", line=line))


def test_next_value_differs_pairs_each_start_with_the_load_before_it() -> None:
    params = {"first": "torchtitan_checkpoint_loading", "then": "torchtitan_training_starts"}
    load, start = params["first"], params["then"]
    b = _call("next_value_differs", [_step(load, 45, 10), _step(start, 26, 14)], **params)
    assert b is not None and (b.fields["before"], b.fields["after"], b.fields["expected"]) == (45, 26, 46)
    assert b.ranks == frozenset({0})
    assert _call("next_value_differs", [_step(load, 45, 10), _step(start, 46, 14)], **params) is None
    # a fresh start later in the same file pairs with no load; a load without a step pairs with nothing
    assert _call("next_value_differs", [_step(load, 45, 10), _step(start, 46, 14), _step(start, 1, 90)],
                 **params) is None
    assert _call("next_value_differs", [_step(load, None, 10), _step(start, 1, 14)], **params) is None
    # other ranks' lines do not pair
    assert _call("next_value_differs", [_step(load, 45, 10, rank=1), _step(start, 1, 14, rank=0)], **params) is None
