"""Redacting a 10 MB log, against plain-replace and single-regex baselines in the same run.

Numbers: `pytest tests/share/test_bench_redact.py --benchmark-enable`.
"""

from __future__ import annotations

import random
import re

import pytest

from diagnose.output.redact import redact_text
from tests.share.conftest import leaks
from tests.share.planted import PLANTED_LOG

FILLER = (
    "[rank3]:[E416 13:21:26.967375581 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=876319, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for "
    "600089 milliseconds before timing out.\n"
    "Epoch 3:  45%|████▌     | 450/1000 [01:23<01:42,  5.37it/s, loss=2.31, v_num=0]\n"
    "step 1200 | loss 3.2145 | lr 3.0e-04 | dt 412.33ms | tok/sec 127000.12 | mfu 41.2%\n"
    '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
)
SIZE = 10_000_000
_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")


@pytest.fixture(scope="module")
def big_log() -> str:
    rnd = random.Random(7)
    parts, size = [], 0
    while size < SIZE:
        chunk = PLANTED_LOG if rnd.random() < 0.05 else FILLER
        parts.append(chunk)
        size += len(chunk)
    return "".join(parts)


@pytest.mark.benchmark(group="redact-10MB")
def test_bench_redact_10mb(benchmark, big_log: str) -> None:
    out = benchmark.pedantic(redact_text, args=(big_log,), rounds=3, iterations=1)
    assert leaks(out) == []


@pytest.mark.benchmark(group="redact-10MB")
def test_bench_baseline_str_replace(benchmark, big_log: str) -> None:
    benchmark.pedantic(lambda: big_log.replace("gpu47", "node-1").replace("ewulff", "<user>"),
                       rounds=3, iterations=1)


@pytest.mark.benchmark(group="redact-10MB")
def test_bench_baseline_single_regex(benchmark, big_log: str) -> None:
    benchmark.pedantic(lambda: _IPV4.sub("<ip>", big_log), rounds=3, iterations=1)
