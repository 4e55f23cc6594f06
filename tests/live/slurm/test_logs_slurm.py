"""`diagnose logs --slurm JOBID`: a finished job's output files are found through Slurm and diagnosed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

SCRIPT = """#!/bin/bash
#SBATCH -n 1
#SBATCH -e {err}
echo "step 10 loss 2.31"
echo "Traceback (most recent call last):" >&2
echo '  File "train.py", line 12, in <module>' >&2
echo "RuntimeError: CUDA error: out of memory" >&2
exit 1
"""


def test_logs_slurm_reads_the_finished_jobs_files(slurm_cluster, tmp_path: Path) -> None:
    err = tmp_path / "job-%j.err"
    script = tmp_path / "oom.sbatch"
    script.write_text(SCRIPT.format(err=err))
    job = slurm_cluster.sbatch(script)
    deadline = time.monotonic() + 60
    while slurm_cluster.state(job) not in ("", "COMPLETED", "FAILED") and time.monotonic() < deadline:
        time.sleep(0.3)
    assert slurm_cluster.state(job) in ("", "COMPLETED", "FAILED")
    proc = subprocess.run([sys.executable, "-m", "diagnose", "logs", "--slurm", job, "--json"], capture_output=True,
                          text=True, timeout=180, env=slurm_cluster.env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    top = report["causes"][0]
    assert top["id"] == "per_rank_batch_too_large", [c["id"] for c in report["causes"]]
    sources = {e["source"] for e in top["evidence"]}
    assert str(tmp_path / f"job-{job}.err") in sources
    missing = subprocess.run([sys.executable, "-m", "diagnose", "logs", "--slurm", "99999999"], capture_output=True,
                             text=True, timeout=60, env=slurm_cluster.env)
    assert missing.returncode == 2 and "99999999" in missing.stderr
