"""Benchmarks: CLI start-up against a bare interpreter, and rule evaluation over 16,384 ranks.

Run with `pytest tests/core/test_bench_engine.py --benchmark-enable`; by default each runs once as a test.
"""

import subprocess
import sys

import pytest

from diagnose.engine import diagnose_evidence
from diagnose.evidence import parse_evidence

RANKS = 16_384
CULPRIT = 9_001


def _cli_help() -> None:
    subprocess.run([sys.executable, "-m", "diagnose", "--help"], check=True, capture_output=True)


def _bare_python() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True)


@pytest.mark.benchmark(group="startup")
def test_bench_cli_help_startup(benchmark):
    benchmark(_cli_help)


@pytest.mark.benchmark(group="startup")
def test_bench_bare_python_baseline(benchmark):
    benchmark(_bare_python)


def _many_rank_evidence() -> list:
    records = [{"kind": "rank_exit", "rank": CULPRIT, "exitcode": -9, "signal": "SIGKILL", "error_file": False}]
    for r in range(RANKS):
        if r == CULPRIT:
            continue
        text = f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE)"
        records.append({"kind": "log_line", "signature": "nccl_watchdog_timeout", "rank": r, "text": text,
                        "fields": {"seq": 88, "op": "ALLREDUCE", "numel_in": 1048576}})
        records.append({"kind": "log_line", "signature": "nccl_watchdog_work_status", "rank": r,
                        "fields": {"seq": 88, "last_enqueued": 88, "last_completed": 87}})
    return parse_evidence(records)


@pytest.mark.benchmark(group="engine")
def test_bench_rule_evaluation_16k_ranks(benchmark):
    evidence = _many_rank_evidence()
    diagnose_evidence(evidence[:10])  # rules loaded and cached outside the timing
    report = benchmark(diagnose_evidence, evidence)
    top = report.causes[0]
    assert top.id == "rank_failure" and top.ranks == [CULPRIT]
    assert report.ranks.world_size == RANKS
