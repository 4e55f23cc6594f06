"""Real CPU torch runs: a slow Dataset is input-bound, a chatty all-reduce is communication-bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.commands.scaling import collect_scaling_evidence
from diagnose.probes.steptime.probe import parse_step_lines
from diagnose.probes.steptime.profiler_trace import parse_profiler_trace

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def _lines(path: Path):
    return enumerate(path.read_text().splitlines(), 1)


def test_slow_dataset_trace_is_input_bound(slow_data_run: Path) -> None:
    steps = parse_profiler_trace(slow_data_run / "trace.json")
    assert len(steps) == 4 and all(s.step is not None for s in steps)
    for s in steps:  # 8 samples x 4 ms of sleep per batch
        assert s.data_time >= 0.030 and s.data_time > 0.5 * s.step_time
        assert s.comm_time == 0.0 and s.compute_time > 0
    analysis = analyze_scaling(steps)
    assert analysis.summary["limit"] == "input"
    assert analysis.summary["move"]["runbook"] == "R.scale.gpu-waits-for-data"
    assert analysis.summary["move"]["scale_out"] == "do not add GPUs yet"
    assert analysis.summary["data_wait_share"] > 0.5


def test_slow_dataset_log_is_input_bound(slow_data_run: Path) -> None:
    metrics = parse_step_lines(_lines(slow_data_run / "train.log"), "train.log")
    assert len(metrics) == 13  # the config line and 12 steps
    assert metrics[0].world_size == 1 and metrics[0].local_batch == 8 and metrics[0].accumulation == 1
    assert all(m.data_time > 0.03 for m in metrics[1:]) and all(m.lr == 0.05 for m in metrics[1:])
    (row,) = analyze_scaling(metrics).summary["runs"]
    assert row["limit"] == "input" and row["b_eff"] == 8


def test_chatty_all_reduce_traces_are_comm_bound(chatty_runs: dict[str, Path]) -> None:
    ranks = [parse_profiler_trace(chatty_runs["ws2"] / f"trace_rank{r}.json") for r in (0, 1)]
    for r, steps in enumerate(ranks):
        assert steps and all(s.rank == r and s.world_size == 2 for s in steps)
        assert all(s.comm_time > 5 * s.compute_time for s in steps)
    analysis = analyze_scaling(ranks[0] + ranks[1])
    assert analysis.summary["limit"] == "comm"
    assert analysis.summary["move"]["runbook"] == "R.comm.speed-barely-improves"
    assert not analysis.summary["runs"][0]["stragglers"]


def test_eta_between_one_and_two_ranks(chatty_runs: dict[str, Path]) -> None:
    evidence, skipped, _ = collect_scaling_evidence([chatty_runs["ws1"], chatty_runs["ws2"]])
    assert not skipped
    analysis = analyze_scaling(evidence)
    trace_rows = [row for row in analysis.summary["efficiency"] if row["basis"] == "step_time"
                  and str(row["run"]).endswith("ws2")]
    assert trace_rows, analysis.summary["efficiency"]
    eta = trace_rows[0]["eta"]
    assert 0 < eta < 0.8  # two CPU ranks on 2 cores all-reducing 40 buffers: well below linear


def test_straggler_rank_is_named(chatty_runs: dict[str, Path]) -> None:
    evidence, _, _ = collect_scaling_evidence([chatty_runs["straggler"]])
    facts = [f for f in analyze_scaling(evidence).facts if f.name == "straggler"]
    assert {f.rank for f in facts} == {1}


def test_rank_prefixed_logs(chatty_runs: dict[str, Path]) -> None:
    metrics = parse_step_lines(_lines(chatty_runs["ws2"] / "rank1.log"), "rank1.log")
    steps = [m for m in metrics if m.step is not None]
    assert len(steps) == 8 and {m.rank for m in steps} == {1} and all(m.step_time > 0 for m in steps)
