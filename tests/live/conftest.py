"""Fixtures that start real hung gloo jobs (torchrun or a plain launcher) and always end them."""

from __future__ import annotations

import os
import signal
import socket
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
    env.pop("RANK", None)
    cmd = _command(launcher, nproc, tmp, env)
    log = tmp / "job.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    job = HungJob(proc, {}, log, scenario, tmp)
    want = nproc if ready is None else ready
    deadline = time.monotonic() + 40 + 15 * nproc  # 16 torch imports take minutes on 2 loaded cores
    while len(job.rank_pids) < want:
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(job)
            raise RuntimeError(f"job {scenario} did not reach its hang: {log.read_text()[-2000:]}")
        time.sleep(0.1)
        job.rank_pids = {int(p.stem[4:]): int(p.read_text()) for p in tmp.glob("rank*.ready")
                         if p.read_text()}
    time.sleep(0.5)  # let the ranks enter the call that hangs
    return job


FAKE_DEEPSPEED = """\
import os, subprocess, sys
args = sys.argv[1:]
script, nproc = args[-1], int(os.environ["FAKE_NPROC"])
port = [a.split("=", 1)[1] for a in args if a.startswith("--master_port=")][0]
procs = []
for rank in range(nproc):  # what deepspeed.launcher.launch sets for each local process
    env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(nproc),
           "LOCAL_SIZE": str(nproc), "CROSS_RANK": "0", "CROSS_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": port}
    procs.append(subprocess.Popen([sys.executable, "-u", script, f"--local_rank={rank}"], env=env))
for proc in procs:
    proc.wait()
"""


def _command(launcher: str, nproc: int, tmp: Path, env: dict[str, str]) -> list[str]:
    """The command line of each launcher; `env` gets what the launcher needs from outside."""
    script = str(JOBS / "hang_job.py")
    if launcher == "torchrun":
        return [PYTHON, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "--monitor-interval",
                "0.5", script]
    if launcher == "launch":  # the deprecated launcher: it passes --local-rank=N as well
        return [PYTHON, "-m", "torch.distributed.launch", "--nproc-per-node", str(nproc), "--monitor-interval",
                "0.5", script]
    if launcher == "shell":  # a bare python per rank, the rank an argument
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
        loop = (f'for r in $(seq 0 {nproc - 1}); do "{PYTHON}" "{script}" --rank $r --world-size {nproc} & done; '
                "wait")
        return ["bash", "-c", loop]
    if launcher == "deepspeed":  # deepspeed.launcher.launch's process layout, emulated (no deepspeed here)
        pkg = tmp / "fake" / "deepspeed" / "launcher"
        pkg.mkdir(parents=True)
        for init in (pkg.parent / "__init__.py", pkg / "__init__.py"):
            init.write_text("")
        (pkg / "launch.py").write_text(FAKE_DEEPSPEED)
        env.update(PYTHONPATH=str(tmp / "fake"), FAKE_NPROC=str(nproc))
        return [PYTHON, "-u", "-m", "deepspeed.launcher.launch", "--world_info=e30=", "--node_rank=0",
                "--master_addr=127.0.0.1", f"--master_port={_free_port()}", script]
    if launcher == "plain":
        return [PYTHON, str(JOBS / "launch.py"), str(nproc), script]
    return [PYTHON, str(JOBS / "launchers.py"), launcher, str(nproc)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(job: HungJob) -> None:
    """End the job we started: the launcher and every process below it, by pid."""
    try:
        tree = [psutil.Process(job.proc.pid), *psutil.Process(job.proc.pid).children(recursive=True)]
    except psutil.Error:
        tree = []
    pids = list(job.rank_pids.values()) + [int(p.read_text()) for p in job.marks.glob("orphan*.pid")]
    tree += [psutil.Process(p) for p in pids if _ours(p, job.marks)]
    for proc in tree:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    job.proc.wait(timeout=10)


def _ours(pid: int, marks: Path) -> bool:
    """A pid we recorded still belongs to one of our job processes (not a reused pid)."""
    try:
        return psutil.Process(pid).environ().get("LIVE_MARK_DIR") == str(marks)
    except psutil.Error:
        return False


@pytest.fixture
def hung_job(tmp_path: Path) -> Iterator:
    """Factory: hung_job(scenario, nproc=2, launcher=..., ready=None, env=None) -> HungJob.

    launcher: torchrun, launch (torch.distributed.launch), plain (tests/live/jobs/launch.py), shell,
    deepspeed (emulated), spawn (mp.spawn), mp-spawn, mp-forkserver, mp-fork, lightning (emulated).
    """
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
