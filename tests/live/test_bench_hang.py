"""Benchmark: the whole live probe and diagnosis (`run_hang`) on a 2-rank hung torchrun job."""

from __future__ import annotations

import pytest

from diagnose.commands.hang import run_hang

pytestmark = pytest.mark.torch


def test_bench_run_hang_two_ranks(hung_job, benchmark) -> None:
    job = hung_job("skip_allreduce", nproc=2)
    report = benchmark.pedantic(run_hang, args=(f"pid:{job.pid}",), rounds=5, iterations=1, warmup_rounds=1)
    assert (report.causes[0].id, report.causes[0].ranks) == ("collective_mismatch", [1])
