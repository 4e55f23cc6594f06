"""Many ranks: one rank's CUDA OOM among 4,095 watchdog timeouts; the top cause must name that one rank
(not the victims, not torchrun's Root Cause); the wall time, start-up included, is the benchmark's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scale_gen import CULPRIT, ROOT_CAUSE_VICTIM, WORLD

TOP_CAUSES = ("rank_failure", "per_rank_batch_too_large")

pytestmark = pytest.mark.slow


def run_diagnose(path: Path) -> tuple[dict, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(path), "--json"],
                          capture_output=True, text=True, timeout=600)  # a bound, not a benchmark
    wall = time.perf_counter() - start
    assert proc.returncode == 0, f"diagnose exited {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout), wall


def test_one_oom_rank_among_4096(many_rank_logs: Path, benchmark) -> None:
    assert len(list(many_rank_logs.rglob("*.log"))) == WORLD + 1
    if benchmark.enabled:
        run_diagnose(many_rank_logs)  # warm the page cache and any signature-database cache
    report, wall = benchmark.pedantic(run_diagnose, args=(many_rank_logs,), rounds=1, iterations=1)
    causes = report["causes"]
    summary = "; ".join(f"{c['id']} ranks={c.get('ranks')}" for c in causes[:3])
    print(f"4096 ranks ({many_rank_logs.name}): {wall:.2f}s, {summary}")
    top = causes[0]
    assert top["id"] in TOP_CAUSES or top.get("refines") in TOP_CAUSES, summary
    assert top.get("ranks") == [CULPRIT], summary
    assert ROOT_CAUSE_VICTIM not in (top.get("ranks") or []), summary
    assert top.get("evidence"), "no evidence cited"
    assert any(e.get("rank") == CULPRIT or f"rank{CULPRIT}]" in e.get("text", "") for e in top["evidence"]), \
        "the top cause's evidence does not come from the culprit rank"
    seen = report.get("ranks", {}).get("seen", [])
    assert len(seen) == WORLD or report.get("ranks", {}).get("world_size") == WORLD, "not all ranks identified"
