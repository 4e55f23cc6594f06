"""Helpers of the hook tests: run the job under torchrun (loopback only) and clean up every process."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

JOB = Path(__file__).parent / "jobs" / "hook_job.py"
WALL_LIMIT_S = 60


@dataclass
class JobRun:
    returncode: int
    output: str
    report_dir: Path

    def report(self, rank: int) -> dict:
        return json.loads((self.report_dir / f"rank-{rank}.json").read_text())

    def kinds(self, rank: int) -> list[str]:
        return [e["kind"] for e in self.report(rank)["evidence"]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_job(tmp: Path, scenario: str, *, hook: bool = True, nproc: int = 2, **env: str) -> JobRun:
    """One torchrun run of the job; the whole process group is killed if it outlives the wall limit."""
    tmp.mkdir(parents=True, exist_ok=True)
    report_dir = tmp / "diagnose-reports"
    full_env = {**os.environ, "SCENARIO": scenario, "HOOK": "1" if hook else "0",
                "REPORT_DIR": str(report_dir), "TMPDIR": str(tmp), **env}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}",
           "--master-addr=127.0.0.1", f"--master-port={free_port()}", str(JOB)]
    proc = subprocess.Popen(cmd, cwd=tmp, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=WALL_LIMIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return JobRun(proc.returncode, out, report_dir)


_VOLATILE = [
    (re.compile(r"^[WEI]\d{4} .*$", re.M), "<log>"),  # torchrun's glog lines (time, pid)
    (re.compile(r"pid: \d+|PID \d+"), "pid: N"),
    (re.compile(r"\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d"), "<time>"),
    (re.compile(r"\[127\.0\.0\.1\]:\d+"), "[127.0.0.1]:<port>"),
    (re.compile(r".*UserWarning: Failed to initialize NumPy.*\n.*\n"), ""),
]


def normalize(output: str) -> str:
    """Output without the hook's lines and without what differs between any two runs."""
    text = "\n".join(line for line in output.splitlines() if "[diagnose]" not in line)
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def rules_present() -> bool:
    """Whether the engine has diagnosis rules to run (it is being written alongside the hook)."""
    root = Path(__file__).resolve().parents[2] / "rules"
    return any(p for p in root.rglob("*.yaml") if "signatures" not in p.parts and not p.name.endswith(".test.yaml")
               and p.name != "rank_sources.yaml" and "redaction" not in p.parts)


@pytest.fixture
def need_rules() -> None:
    if not rules_present():
        pytest.skip("no diagnosis rules in rules/ yet: the merged cause cannot be decided")
