"""Healthy runs (Sigma's goodlog): no rule may conclude anything above low confidence on them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.torch
def test_healthy_ddp_run_raises_nothing(tmp_path):
    pytest.importorskip("torch")
    logs = tmp_path / "logs"
    env = {**os.environ, "GOODRUN_OUT": str(tmp_path), "NCCL_DEBUG": "INFO"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--log-dir", str(logs), "--redirects", "3", "--tee", "3",
                           str(Path(__file__).with_name("healthy_ddp.py"))],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (tmp_path / "console.log").write_text(proc.stdout + proc.stderr)
    report = run_logs([tmp_path])
    loud = [(c.id, c.confidence, c.summary) for c in report.causes if c.confidence != "low"]
    assert loud == []
    assert {Path(s.source).name for s in report.skipped if s.reason == "binary file"} == {"ckpt.pt"}


def test_healthy_step_log_raises_nothing(tmp_path):
    healthy = tmp_path / "train.log"
    healthy.write_text("\n".join(
        ["node1:11:11 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"]
        + [f"[rank0]: step {i} loss {1.0 / (i + 1):.4f} step_time 0.101 data_time 0.002" for i in range(200)]
        + ["Saving model checkpoint to out/checkpoint-200", "Training completed."]))
    report = run_logs([healthy])
    assert [c for c in report.causes if c.confidence != "low"] == []
