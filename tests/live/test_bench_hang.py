"""Benchmarks: the whole live probe and diagnosis (`run_hang`) on hung gloo jobs of 2, 4 and 16 ranks.

Run with `--benchmark-enable`; the time per extra rank is the slope of the means over 4, 8 and 16 ranks.
The assertions are on the diagnosis; the wall-clock figures belong to the benchmark table.
"""

from __future__ import annotations

import pytest

from diagnose.commands.hang import run_hang

pytestmark = pytest.mark.torch


def test_bench_run_hang_two_ranks(hung_job, benchmark) -> None:
    job = hung_job("skip_allreduce", nproc=2)
    report = benchmark.pedantic(run_hang, args=(f"pid:{job.pid}",), rounds=5, iterations=1, warmup_rounds=1)
    assert (report.causes[0].id, report.causes[0].ranks) == ("collective_mismatch", [1])


@pytest.mark.slow
@pytest.mark.benchmark(group="hang-scale")
@pytest.mark.parametrize("nproc", [4, 8, 16])
def test_bench_run_hang_scale(hung_job, benchmark, nproc) -> None:
    if nproc > 4 and not benchmark.enabled:
        pytest.skip("8 and 16 ranks are timed with --benchmark-enable; the diagnosis at 4 ranks is the test")
    job = hung_job("skip_allreduce", nproc=nproc, launcher="plain")
    report = benchmark.pedantic(run_hang, args=(f"pid:{job.pid}",), rounds=3, iterations=1, warmup_rounds=1)
    assert (report.causes[0].id, report.causes[0].ranks) == ("collective_mismatch", [1])
    assert report.ranks.seen == list(range(nproc))
