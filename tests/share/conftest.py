"""Shared fixtures: a report full of planted identifiers, and real headless Chromium."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from diagnose.output.report import Cause, EvidenceRef, RankState, RankSummary, Report, Skipped
from tests.share.planted import PLANTED, PLANTED_LOG


def leaks(text: str, planted: list[str] = PLANTED) -> list[str]:
    """Planted identifiers still present in `text` as whole tokens."""
    return [p for p in planted if re.search(rf"(?<![A-Za-z0-9]){re.escape(p)}(?![A-Za-z0-9])", text)]


@pytest.fixture
def planted_report() -> Report:
    lines = PLANTED_LOG.splitlines()
    refs = [EvidenceRef(source="/home/ewulff/logs/slurm-42859712.out", line=i + 1, rank=i % 8,
                        host="gpu47" if i % 2 else "node23", text=t) for i, t in enumerate(lines)]
    states = [RankState(rank=r, state="all_reduce #41 on gpu48") for r in range(8)]
    states[3] = RankState(rank=3, state="exited -9 (SIGKILL) on gpu47.cluster.uni-example.de",
                          culprit=True, first_failure=True)
    return Report(
        command="logs /home/ewulff/logs", symptom="hang_mid_run",
        causes=[Cause(id="rank_failure", score=0.91, confidence="high", ranks=[3], nodes=["gpu47"],
                      summary="rank 3 on gpu47 (10.30.112.212) was killed (pid 622423), job 42859712",
                      evidence=refs[:12], fix="see /home/ewulff/particleflow/run.sh", rules=["rank-killed"]),
                Cause(id="host_memory", refines=None, score=0.55, confidence="medium", ranks=[3],
                      summary="ewulff's job on m9g-1-3 in partition m9gpart", evidence=refs[12:],
                      fix="lower the batch", rules=["oom-kill"])],
        ranks=RankSummary(world_size=8, seen=list(range(8)), missing=[]),
        skipped=[Skipped(source="/home/ewulff/logs/core.622423", reason="binary file")],
        next=["run py-spy dump --pid 622423 on node23"], notes=[PLANTED_LOG],
        rank_states=states, timeline=refs[9:12],
        evidence=[{"kind": "rank_env", "rank": 0, "provenance": {"host": "gpu47", "pid": 622423},
                   "variables": {"MASTER_ADDR": "10.28.1.16", "USER": "catalys1", "SLURM_JOB_ID": "42859712"}}],
    )


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a real Chromium; skipped where absent, but a failure under CI=true."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    reason = "Chromium is not installed (apt-get install -y chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true requires it")
    pytest.skip(reason)
