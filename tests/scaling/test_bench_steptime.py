"""Parsing a large step log, against a plain line iteration of the same lines in the same run."""

from __future__ import annotations

import random

import pytest

from diagnose.probes.steptime.probe import parse_step_lines

N_LINES = 50_000


@pytest.fixture(scope="module")
def big_log() -> list[tuple[int, str]]:
    rng = random.Random(0)
    lines = []
    for i in range(N_LINES):
        kind = i % 5
        if kind == 0:
            lines.append(f"[rank{i % 8}]: step {i} loss: {rng.random():.4f} lr: 3.0e-04 data_time: "
                         f"{rng.random() / 10:.4f} step_time: {rng.random():.4f}")
        elif kind == 1:
            lines.append(f"{{'loss': {rng.random():.4f}, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.{i}}}")
        else:
            lines.append(f"NCCL INFO Channel {i % 32:02d}/0 : {i % 8}[{i % 8}] -> {(i + 1) % 8}[0] via P2P/IPC")
    return list(enumerate(lines, 1))


def _baseline(lines: list[tuple[int, str]]) -> int:
    return sum(1 for _, text in lines if text.strip())


def test_bench_baseline_iteration(benchmark, big_log) -> None:
    assert benchmark(_baseline, big_log) == N_LINES


def test_bench_parse_step_lines(benchmark, big_log) -> None:
    metrics = benchmark(parse_step_lines, big_log, "big.log")
    assert len(metrics) == 2 * N_LINES // 5
