"""Issue 13 on a real torchrun job: the straggler is found from torchrun's own `--tee` console prefixes
(`[default1]:`) and from the per-rank files of `--log-dir` (attempt_0/<rank>/stdout.log), as one run."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.commands.scaling import collect_scaling_evidence, run_scaling

pytestmark = [pytest.mark.torch, pytest.mark.slow]
JOB = Path(__file__).parent / "gen" / "tee_straggler.py"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def teed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("tee")
    console = root / "console.txt"
    for attempt in range(3):  # a free port can be taken by a concurrent job before rendezvous binds it
        proc = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--tee", "3",
             "--log-dir", str(root / "logs"), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{_port()}",
             str(JOB)], capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin"})
        if proc.returncode == 0:
            break
        assert attempt < 2, proc.stderr[-2000:]
    console.write_text(proc.stdout)
    return console, root / "logs"


def test_straggler_from_torchrun_console_prefixes(teed: tuple[Path, Path]) -> None:
    console, _ = teed
    assert "[default1]:step" in console.read_text()
    facts = [f for f in analyze_scaling(collect_scaling_evidence([console])[0]).facts if f.name == "straggler"]
    assert {f.rank for f in facts} == {1}


def test_per_rank_log_dir_is_one_run_with_its_straggler(teed: tuple[Path, Path]) -> None:
    _, logs = teed
    report = run_scaling([logs])
    runs = [r for r in report.scaling["runs"] if r["step_time"]]
    assert len(runs) == 1 and runs[0]["ranks"] == [0, 1] and runs[0]["world_size"] == 2
    assert runs[0]["stragglers"] == [1]
    assert any("straggler-rank" in c.rules and c.ranks == [1] for c in report.causes)
