"""`diagnose logs` on a folder mixing every artifact family stays well under a second (pytest-benchmark)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    for i, path in enumerate(sorted(FIXTURES.rglob("*.*"))):
        shutil.copy(path, root / f"paste-{i}.txt")  # names say nothing: kinds come from the content
    (root / "table.md").write_text("| GPUs | samples/s |\n|---|---|\n| 1 | 900 |\n| 8 | 3000 |\n")
    return root


def test_bench_logs_on_mixed_artifacts(benchmark, mixed: Path) -> None:
    run_logs([mixed])  # rules, signatures and recognition data loaded once, as in one CLI run
    started = time.process_time()  # CPU time: a loaded machine slows the wall clock, not the work
    run_logs([mixed])
    assert time.process_time() - started < 1.0
    report = benchmark.pedantic(run_logs, args=([mixed],), rounds=3, iterations=1)
    assert report.causes and report.symptom
