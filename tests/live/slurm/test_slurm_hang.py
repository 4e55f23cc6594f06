"""`diagnose hang --job <slurm id>` against real hung jobs on a one-node Slurm: torchrun and srun ranks."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
import pytest

from diagnose.commands.hang import run_hang
from diagnose.probes.live import stacks

pytestmark = [pytest.mark.torch, pytest.mark.slow]

LAUNCHES = {"torchrun": "hang_torchrun.sbatch", "srun": "hang_srun.sbatch"}


@pytest.fixture(scope="module", params=sorted(LAUNCHES))
def slurm_job(request, slurm_submit, slurm_cluster, tmp_path_factory):
    """A running Slurm job whose rank 1 skipped an all_reduce (PG timeout 60 s), and its cluster."""
    job = slurm_submit(LAUNCHES[request.param], tmp_path_factory.mktemp(f"marks-{request.param}"))
    yield request.param, job, slurm_cluster
    slurm_cluster.cancel(job.id)


def _activities(job) -> dict[int, str]:
    targets = [stacks.Target(pid, rank) for rank, pid in job.rank_pids.items()]
    return {s.rank: s.activity for s in stacks.sample_stacks(targets, samples=1).evidence}


def _assert_unharmed(job, cluster, before: dict[int, str]) -> None:
    """The job still runs in Slurm, no rank is stopped, each is where it was, no probe step is left."""
    assert cluster.state(job.id) == "RUNNING"
    for pid in job.rank_pids.values():
        assert psutil.Process(pid).status() in (psutil.STATUS_SLEEPING, psutil.STATUS_RUNNING)
    assert _activities(job) == before
    steps = cluster.run("squeue", "-h", "-s", "-j", job.id, "-o", "%i").split()
    assert all(s.split(".")[-1] in ("batch", "0", "extern") for s in steps), steps


def _assert_diagnosis(report: dict, job, kind_note: str) -> None:
    top = report["causes"][0]
    assert (top["id"], top["ranks"]) == ("collective_mismatch", [1]), [(c["id"], c["ranks"]) for c in report["causes"]]
    assert report["ranks"]["seen"] == [0, 1] and report["ranks"]["missing"] == []
    assert any(kind_note in n for n in report["notes"]), report["notes"]
    pids = ", ".join(f"rank {r} pid {p}" for r, p in sorted(job.rank_pids.items()))
    found = [n for n in report["notes"] if "rank processes" in n]
    assert found and all(f"({pids})" in n for n in found), (found, pids)  # not the agent or the shell


@pytest.mark.parametrize("form", ["bare", "prefixed"])
def test_cli_diagnoses_slurm_job(slurm_job, form) -> None:
    launch, job, cluster = slurm_job
    before = _activities(job)
    assert before == {0: "collective", 1: "sleeping"}
    ident = job.id if form == "bare" else f"slurm:{job.id}"
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "diagnose", "hang", "--job", ident, "--json"],
                         capture_output=True, text=True, timeout=60, check=False, env=cluster.env)
    elapsed = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    _assert_diagnosis(report, job, f"job {job.id} read as a Slurm job id")
    assert any(f"job-{job.id}.out" in n for n in report["notes"]), report["notes"]  # its output file was read
    assert elapsed < 10, elapsed
    _assert_unharmed(job, cluster, before)


def test_fanout_through_srun_matches_local(slurm_job) -> None:
    launch, job, cluster = slurm_job
    before = _activities(job)
    local = run_hang(f"slurm:{job.id}", fanout=False).to_json_dict()
    fanned = run_hang(f"slurm:{job.id}", fanout=True).to_json_dict()
    _assert_diagnosis(local, job, f"job {job.id} read as a Slurm job id")
    _assert_diagnosis(fanned, job, "through srun --overlap, 0 failed")
    assert [(c["id"], c["ranks"]) for c in fanned["causes"]] == [(c["id"], c["ranks"]) for c in local["causes"]]
    assert fanned["rank_states"] == local["rank_states"]
    _assert_unharmed(job, cluster, before)
