"""A real one-node Slurm cluster on localhost (munged, slurmctld, slurmd) for the live tests.

Installs nothing: `.ci/run` installs Debian's ``slurm-wlm`` and ``munge``. Where they are absent
(or we are not root, which ``SlurmUser=root`` needs) the tests skip, except under ``CI=true``
where that is a failure. Daemons are started from a config in a tmp dir and stopped by pid.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

BINARIES = ("munged", "munge", "unmunge", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "squeue",
            "scancel", "sinfo")
JOBS = Path(__file__).parent / "jobs"
HANG_JOB = Path(__file__).parents[1] / "jobs" / "hang_job.py"
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
MUNGE_PID = Path("/run/munge/munged.pid")

CONF = """\
ClusterName=difftest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
KillWait=2
NodeName=localhost CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def skip_or_fail(reason: str) -> None:
    """Skip with a reason; under CI=true a missing prerequisite is a failure instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass
class Cluster:
    """A running one-node cluster: its folder, config, client environment and the jobs we submitted."""

    root: Path
    conf: Path
    env: dict[str, str]
    jobs: list[str] = field(default_factory=list)

    def run(self, *cmd: str, timeout: float = 20) -> str:
        """Run a Slurm client command against this cluster; its stdout (raises on failure)."""
        out = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout

    def sbatch(self, script: Path, *args: str, env: dict[str, str] | None = None) -> str:
        """Submit a batch script; the job id (remembered, so teardown can cancel it)."""
        exports = ",".join(f"{k}={v}" for k, v in (env or {}).items())
        job = self.run("sbatch", "--parsable", f"--export=ALL{',' + exports if exports else ''}",
                       "-o", str(self.root / "job-%j.out"), *args, str(script)).strip().split(";")[0]
        self.jobs.append(job)
        return job

    def state(self, job: str) -> str:
        """The job's state as squeue says it (empty once Slurm forgot it)."""
        return self.run("squeue", "-h", "-j", job, "-o", "%T").strip()

    def cancel(self, job: str, wait: float = 15) -> None:
        """scancel the job and wait until it has left the running states."""
        subprocess.run(["scancel", job], env=self.env, capture_output=True, timeout=10, check=False)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if self.state(job) not in ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING"):
                    return
            except RuntimeError:
                return
            time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _munge_ok(env: dict[str, str]) -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5, check=False, env=env)
        out = subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=5, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"STATUS:" in out.stdout and b"Success" in out.stdout


def _start_munge(env: dict[str, str]) -> int | None:
    """Reuse a working munged; else start one as user munge. Returns the pid we started, if any."""
    if MUNGE_SOCKET.exists() and _munge_ok(env):
        return None
    subprocess.run(["install", "-d", "-o", "munge", "-g", "munge", "-m", "0755", str(MUNGE_SOCKET.parent)],
                   check=True)
    subprocess.run(["runuser", "-u", "munge", "--", shutil.which("munged") or "munged"], check=True, timeout=10)
    for _ in range(50):
        if MUNGE_SOCKET.exists() and MUNGE_PID.exists():
            break
        time.sleep(0.1)
    if not _munge_ok(env):
        pytest.fail("munged started but munge -n | unmunge does not succeed")
    return int(MUNGE_PID.read_text().split()[0])


def _stop(pid: int | None, wait: float = 15) -> None:
    """SIGTERM one daemon we started, by pid, and wait for it to go."""
    if pid is None:
        return
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Start munged (unless one works already), slurmctld and slurmd; SLURM_CONF is exported meanwhile."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        skip_or_fail(f"Slurm/munge not installed (missing {', '.join(missing)}): "
                     "apt-get install -y slurm-wlm munge")
    if os.geteuid() != 0:
        skip_or_fail("the one-node test cluster runs slurmd as root (SlurmUser=root); not root here")
    root = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "log", "run"):
        (root / sub).mkdir()
    conf = root / "slurm.conf"
    conf.write_text(CONF.format(d=root, ctld_port=_free_port(), slurmd_port=_free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    munged = _start_munge(env)
    started: list[Path] = []
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    cluster = Cluster(root, conf, env)
    try:
        for cmd, pidfile in ((["slurmctld", "-f", str(conf)], "slurmctld.pid"),
                             (["slurmd", "-f", str(conf), "-N", "localhost"], "slurmd.pid")):
            subprocess.run(cmd, env=env, check=True, timeout=20)
            started.append(root / "run" / pidfile)
        deadline = time.monotonic() + 30
        while "idle" not in _sinfo(env):
            if time.monotonic() > deadline:
                logs = "".join((root / "log" / n).read_text()[-1500:] for n in ("slurmctld.log", "slurmd.log"))
                pytest.fail(f"one-node Slurm did not become idle in 30 s:\n{logs}")
            time.sleep(0.2)
        yield cluster
    finally:
        for job in cluster.jobs:
            subprocess.run(["scancel", job], env=env, capture_output=True, timeout=10, check=False)
        pids = [_pid(p) for p in reversed(started)]
        for pid in pids:
            _stop(pid)
        _stop(munged)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def _sinfo(env: dict[str, str]) -> str:
    try:
        return subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True,
                              timeout=5, check=False).stdout
    except subprocess.TimeoutExpired:
        return ""


@dataclass
class SlurmJob:
    """A submitted hung job whose ranks reported ready."""

    id: str
    marks: Path
    rank_pids: dict[int, int]
    output: Path


def submit_hung(cluster: Cluster, script: str, marks: Path, nranks: int = 2, scenario: str = "skip_allreduce",
                wait: float = 30) -> SlurmJob:
    """sbatch one of jobs/*.sbatch and wait until it runs and every rank reached its hang."""
    marks.mkdir(parents=True, exist_ok=True)
    env = {"PYTHON": sys.executable, "HANG_JOB": str(HANG_JOB), "LIVE_SCENARIO": scenario,
           "LIVE_MARK_DIR": str(marks), "LIVE_PG_TIMEOUT": "60", "PYTHONUNBUFFERED": "1",
           "MASTER_PORT": str(_free_port())}
    job = cluster.sbatch(JOBS / script, env=env)
    deadline = time.monotonic() + wait
    pids: dict[int, int] = {}
    while True:
        state = cluster.state(job)
        pids = {int(p.stem[4:]): int(p.read_text()) for p in marks.glob("rank*.ready") if p.read_text()}
        if state == "RUNNING" and len(pids) == nranks:
            break
        if time.monotonic() > deadline or state not in ("RUNNING", "PENDING", "CONFIGURING"):
            out = cluster.root / f"job-{job}.out"
            text = out.read_text()[-2000:] if out.exists() else ""
            cluster.cancel(job)
            raise RuntimeError(f"job {job} did not reach its hang (state {state!r}): {text}")
        time.sleep(0.1)
    time.sleep(0.5)  # let the ranks enter the call that hangs
    return SlurmJob(job, marks, pids, cluster.root / f"job-{job}.out")


@pytest.fixture(scope="session")
def slurm_submit(slurm_cluster: Cluster) -> Iterator:
    """Factory: slurm_submit(script, marks_dir, nranks=2, scenario=...) -> SlurmJob, cancelled at the end."""
    jobs: list[SlurmJob] = []

    def submit(script: str, marks: Path, nranks: int = 2, scenario: str = "skip_allreduce") -> SlurmJob:
        job = submit_hung(slurm_cluster, script, marks, nranks, scenario)
        jobs.append(job)
        return job

    yield submit
    for job in jobs:
        for mark in job.marks.glob("orphan*.pid"):  # a dead rank's child escaped the job but holds its
            _kill_ours(int(mark.read_text()))  # output pipe (step stuck COMPLETING): end it by pid first
        slurm_cluster.cancel(job.id)


def _kill_ours(pid: int) -> None:
    """SIGKILL a process the test job left behind, if that pid still runs our job script."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if HANG_JOB.name.encode() in fh.read():
                os.kill(pid, 9)
    except OSError:
        return
