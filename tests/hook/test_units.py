"""Units of the hook: stack classes, OOM figures, flight-recorder states, watchdog, merging reports."""

from __future__ import annotations

import json
import sys
import time

from diagnose.commands.report import collect_reports, find_reports
from diagnose.evidence import parse_evidence
from diagnose.hook import api, collect, reportfile, stacks, torchstate
from diagnose.hook.watchdog import Watchdog

SP = "/venv/lib/python3.11/site-packages/"


def test_classify_main_thread_activities():
    user = ("/work/train.py", 56, "main", "dist.all_reduce(t)")
    allreduce = [(SP + "torch/distributed/distributed_c10d.py", 3252, "all_reduce", "work.wait()"),
                 (SP + "torch/distributed/c10d_logger.py", 83, "wrapper", ""), user]
    assert stacks.classify(allreduce) == ("collective", "all_reduce", "/work/train.py:56")
    barrier = [(SP + "torch/distributed/distributed_c10d.py", 5356, "barrier", ""), user]
    assert stacks.classify(barrier)[0] == "barrier"
    save = [(SP + "torch/serialization.py", 900, "_save", ""), (SP + "torch/serialization.py", 650, "save", ""), user]
    assert stacks.classify(save)[0] == "checkpoint_io"
    loader = [(SP + "torch/utils/data/dataloader.py", 1300, "_next_data", ""), user]
    assert stacks.classify(loader)[0] == "data_loading"
    sleeping = [("/work/train.py", 54, "main", "time.sleep(30)")]
    assert stacks.classify(sleeping)[0] == "sleeping"
    assert stacks.classify([("/work/train.py", 9, "main", "x = f(y)")], wchan="hrtimer_nanosleep S")[0] == "sleeping"
    assert stacks.classify([("/work/train.py", 9, "run_validation", "x = f(y)")])[0] == "evaluation"
    assert stacks.classify([("/work/train.py", 9, "main", "x = f(y)")])[0] == "user_code"
    assert stacks.render(allreduce)[0] == "all_reduce (torch/distributed/distributed_c10d.py:3252)"


def test_oom_figures_from_real_messages():
    cpu = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
           "you tried to allocate 268435456 bytes. Error code 12 (Cannot allocate memory)")
    assert collect.oom_figures(cpu) == {"device": "host", "requested": 268435456}
    cuda = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which "
            "1.50 GiB is free. Including non-PyTorch memory, this process has 77.64 GiB memory in use. Of the "
            "allocated memory 75.30 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated.")
    figures = collect.oom_figures(cuda)
    assert figures["device"] == "cuda:0" and figures["requested"] == 2 * 2**30
    assert figures["free"] == int(1.5 * 2**30) and figures["in_use"] == int(77.64 * 2**30)
    (state,) = torchstate.cuda_memory(3, figures)  # torch.cuda not initialized here: figures of the message
    assert state["device"] == "cuda:0" and state["requested_bytes"] == 2 * 2**30
    assert collect.oom_figures("ValueError: bad batch") == {}


def test_flight_recorder_dump_to_collective_state():
    dump = {"version": "2.10", "pg_config": {"": {"desc": "", "name": "", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": "4", "last_completed_collective": "3",
                                "last_started_collective": "-1"}},
            "entries": [{"collective_seq_id": 4, "process_group": ["0", "default_pg"], "is_p2p": False,
                         "profiling_name": "gloo:all_reduce", "state": "scheduled", "input_sizes": [[16]],
                         "input_dtypes": ["Float"]}]}
    (state,) = torchstate.collective_states(dump, 0)
    assert (state["op"], state["seq"], state["state"], state["last_enqueued"], state["last_completed"]) == \
        ("all_reduce", 4, "scheduled", 4, 3)
    assert state["shape"] == "16" and "[[16]]" in state["text"]
    parse_evidence([state])


def test_step_makes_no_call_at_all():
    calls: list[str] = []

    def profiler(frame, event, arg):
        if event.startswith("c_"):
            calls.append(getattr(arg, "__name__", "?"))

    before = api._steps
    sys.setprofile(profiler)
    try:
        api.step()
        api.step()
    finally:
        sys.setprofile(None)
    assert api._steps == before + 2
    assert calls == ["setprofile"]  # only the profiler's own switch-off: step() calls nothing


def test_watchdog_fires_twice_per_stall_and_rearms_on_progress():
    counter = [0]
    stalls: list[tuple[float, int]] = []
    dog = Watchdog(0.2, lambda: counter[0], lambda idle, sample: stalls.append((idle, sample)), first_timeout=0.2)
    dog.start()
    try:
        time.sleep(0.75)
        assert [s for _, s in stalls] == [0, 1] and stalls[0][0] >= 0.2
        counter[0] += 1
        time.sleep(0.45)
        assert [s for _, s in stalls][:3] == [0, 1, 0]
    finally:
        dog.stop()
        dog.join(2)
    assert not dog.is_alive()


def test_watchdog_waits_for_first_step_without_startup_timeout():
    stalls: list[int] = []
    dog = Watchdog(0.1, lambda: 0, lambda idle, sample: stalls.append(sample))
    dog.start()
    time.sleep(0.4)
    dog.stop()
    dog.join(2)
    assert stalls == []


def _write(folder, name, rank, evidence, world=None):
    folder.mkdir(parents=True, exist_ok=True)
    data = {"schema": "diagnose.report/1", "causes": [], "ranks": {"world_size": world}, "rank": rank,
            "attempt": 0, "evidence": evidence}
    (folder / name).write_text(json.dumps(data))


def test_merge_finds_reports_and_marks_silent_ranks(tmp_path):
    env = collect.make("rank_env", 1, "environment", variables={"WORLD_SIZE": "3"})
    raised = collect.make("log_line", 1, "exception", "ValueError: x", signature="hook_exception",
                          fields={"type": "ValueError"})
    _write(tmp_path / "node1" / "diagnose-reports", "rank-1.json", 1, [env, raised])
    _write(tmp_path / "node1" / "diagnose-reports", "rank-1.attempt-1.json", 1, [env, raised])
    _write(tmp_path, "rank-2.json", 2, [{"kind": "nonsense"}, collect.make("rank_status", None, "x", status="alive")])
    (tmp_path / "other.json").write_text("{}")
    (tmp_path / "rank-x.json").write_text("{}")
    assert [(r, a) for r, a, _ in find_reports(tmp_path)] == [(1, 0), (1, 1), (2, 0)]
    evidence, skipped, notes = collect_reports(tmp_path)
    assert any("earlier attempts [0]" in n for n in notes)
    silent = sorted(e.rank for e in evidence if e.kind == "rank_status" and e.status == "no_evidence")
    assert silent == [0, 2]  # rank 2's report belongs to attempt 0, rank 0 wrote none
    evidence, skipped, notes = collect_reports(tmp_path / "node1" / "diagnose-reports")
    assert sorted(e.rank for e in evidence if e.kind == "rank_status") == [0, 2]


def test_merge_skips_bad_records_and_fills_rank(tmp_path):
    _write(tmp_path, "rank-2.json", 2, [{"kind": "nonsense"}, collect.make("rank_status", None, "x", status="alive")],
           world=3)
    evidence, skipped, _ = collect_reports(tmp_path)
    assert len(skipped) == 1 and skipped[0].source.endswith("rank-2.json#evidence[0]")
    assert [e.rank for e in evidence if e.kind == "rank_status" and e.status == "alive"] == [2]
    assert sorted(e.rank for e in evidence if e.kind == "rank_status" and e.status == "no_evidence") == [0, 1]


def test_report_layout_and_summary(tmp_path):
    assert reportfile.report_path(tmp_path, 3, 0).name == "rank-3.json"
    assert reportfile.report_path(tmp_path, 3, 1).name == "rank-3.attempt-1.json"
    data = reportfile.build_report([], {"rank": 3, "attempt": 1, "directory": str(tmp_path)}, use_engine=False)
    path = reportfile.write_report(reportfile.report_path(tmp_path, 3, 1), data)
    assert json.loads(path.read_text())["rank"] == 3 and path.read_text().startswith('{\n "schema"')
    lines = reportfile.summary_lines({"rank": 3, "causes": [{"id": "host_memory", "confidence": "high",
                                                             "ranks": [3], "summary": "s", "fix": "f"}]}, "h", path)
    assert all(line.startswith("[diagnose] ") for line in lines) and "host_memory" in lines[1]

