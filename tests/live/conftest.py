"""Fixtures that start real hung gloo jobs (torchrun or a plain launcher) and always end them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

JOBS = Path(__file__).parent / "jobs"
PYTHON = sys.executable


@dataclass
class HungJob:
    """A running job: the launcher process and the rank pids that reported ready."""

    proc: subprocess.Popen[bytes]
    rank_pids: dict[int, int]
    log: Path
    scenario: str
    marks: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def run_id(self) -> str:
        env = psutil.Process(self.rank_pids[0]).environ()
        return env["TORCHELASTIC_RUN_ID"]


def _start(scenario: str, nproc: int, launcher: str, tmp: Path, ready: int | None,
           extra_env: dict[str, str] | None = None) -> HungJob:
    env = {**os.environ, "LIVE_SCENARIO": scenario, "LIVE_MARK_DIR": str(tmp), "LIVE_PG_TIMEOUT": "30",
           "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    script = str(JOBS / "hang_job.py")
    if launcher == "torchrun":
        cmd = [PYTHON, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "--monitor-interval",
               "0.5", script]
    else:
        cmd = [PYTHON, str(JOBS / "launch.py"), str(nproc), script]
    log = tmp / "job.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    job = HungJob(proc, {}, log, scenario, tmp)
    want = nproc if ready is None else ready
    deadline = time.monotonic() + 40
    while len(job.rank_pids) < want:
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(job)
            raise RuntimeError(f"job {scenario} did not reach its hang: {log.read_text()[-2000:]}")
        time.sleep(0.1)
        job.rank_pids = {int(p.stem[4:]): int(p.read_text()) for p in tmp.glob("rank*.ready")
                         if p.read_text()}
    time.sleep(0.5)  # let the ranks enter the call that hangs
    return job


def _stop(job: HungJob) -> None:
    """End the job we started: the launcher and every process below it, by pid."""
    try:
        tree = [psutil.Process(job.proc.pid), *psutil.Process(job.proc.pid).children(recursive=True)]
    except psutil.Error:
        tree = []
    pids = list(job.rank_pids.values()) + [int(p.read_text()) for p in job.marks.glob("orphan*.pid")]
    tree += [psutil.Process(p) for p in pids if _ours(p)]
    for proc in tree:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    job.proc.wait(timeout=10)


def _ours(pid: int) -> bool:
    """A pid we recorded still belongs to one of our job processes (not a reused pid)."""
    try:
        return any("hang_job.py" in part for part in psutil.Process(pid).cmdline())
    except psutil.Error:
        return False


@pytest.fixture
def hung_job(tmp_path: Path) -> Iterator:
    """Factory: hung_job(scenario, nproc=2, launcher='torchrun'|'plain', ready=None, env=None) -> HungJob."""
    jobs: list[HungJob] = []

    def start(scenario: str, nproc: int = 2, launcher: str = "torchrun", ready: int | None = None,
              env: dict[str, str] | None = None) -> HungJob:
        mark = tmp_path / f"job{len(jobs)}"
        mark.mkdir()
        job = _start(scenario, nproc, launcher, mark, ready, env)
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        _stop(job)
