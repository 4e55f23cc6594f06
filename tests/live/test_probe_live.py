"""The live probe against real hung gloo jobs: discovery, stacks, process state, never harming the job."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import psutil
import pytest

from diagnose.analyzers.stacks import rank_views
from diagnose.commands.hang import collect, run_hang
from diagnose.evidence import RankEnv, RankStatus, StackSample, parse_evidence
from diagnose.probes.live import bundle, discovery, stacks

pytestmark = pytest.mark.torch


def assert_unharmed(job, before: dict[int, str]) -> None:
    """Every rank still runs, is not stopped, and is still where it was."""
    targets = [stacks.Target(pid, rank) for rank, pid in job.rank_pids.items()]
    after = {s.rank: s.activity for s in stacks.sample_stacks(targets, samples=1).evidence}
    for rank, pid in job.rank_pids.items():
        status = psutil.Process(pid).status()
        assert status in (psutil.STATUS_SLEEPING, psutil.STATUS_RUNNING, psutil.STATUS_DISK_SLEEP), status
        assert after[rank] == before[rank], (rank, after[rank], before[rank])


def test_skipped_allreduce_three_ranks(hung_job) -> None:
    job = hung_job("skip_allreduce", nproc=3)
    evidence, skipped, notes, _ = collect(f"pid:{job.pid}")
    views = rank_views(evidence)
    assert {r: v.place for r, v in views.items()} == {
        0: "collective all_reduce", 1: "sleeping", 2: "collective all_reduce"}
    assert views[1].call_site and views[1].call_site.startswith("hang_job.py:")
    assert not skipped
    assert notes[0] == f"job {job.pid} read as a launcher pid"
    envs = {e.rank: e.variables for e in evidence if isinstance(e, RankEnv)}
    assert envs[2]["WORLD_SIZE"] == "3" and envs[2]["torch_version"].startswith("2.13")
    assert_unharmed(job, {r: v.activity for r, v in views.items()})


def test_checkpoint_by_run_id_and_save(hung_job, tmp_path) -> None:
    job = hung_job("checkpoint")
    out = tmp_path / "saved"
    report = run_hang(job.run_id(), save=out)
    assert report.command == "hang"
    assert any("torchrun run id" in n for n in report.notes)
    records = [json.loads(line) for line in (out / "evidence.jsonl").read_text().splitlines()]
    views = rank_views(parse_evidence(records))
    assert views[0].activity == "checkpoint_io" and views[0].call_site.startswith("hang_job.py:")
    assert views[1].place == "barrier barrier"
    assert any(p.name.startswith("rank0.") for p in (out / "pyspy").iterdir())
    saved = bundle.read(out)  # the bundle: evidence.jsonl, skipped.jsonl, notes.txt
    assert len(saved["evidence"]) == len(records) and saved["notes"][-1] == f"evidence saved to {out}"
    table = json.loads((out / "processes.json").read_text())
    roles = sorted(p["role"] for p in table["processes"])
    assert roles == ["launcher", "rank", "rank"]
    assert_unharmed(job, {0: "checkpoint_io", 1: "barrier"})


def test_uneven_batches_native_reducer(hung_job) -> None:
    job = hung_job("uneven")
    plain, _, notes, _ = collect(str(job.pid))
    assert [e.activity for e in plain if isinstance(e, StackSample) and e.rank == 0] == ["backward"] * 2
    assert any("stuck in backward" in n for n in notes)
    evidence, _, _, _ = collect(str(job.pid), native=True)
    samples = [e for e in evidence if isinstance(e, StackSample) and e.rank == 0]
    assert samples[0].activity == "backward"
    assert samples[-1].activity == "collective" and samples[-1].op == "all_reduce"  # native: DDP reducer
    assert any("c10d::Reducer" in f for f in samples[-1].frames)
    views = rank_views(evidence)
    assert views[1].place == "barrier barrier"
    assert (views[0].batch, views[1].batch) == (4, 3)  # positions from py-spy --locals


def test_dead_rank_under_plain_launcher(hung_job) -> None:
    job = hung_job("dead", nproc=3, launcher="plain", ready=2)
    evidence, _, notes, _ = collect(f"pid:{job.pid}")
    status = {e.rank: e.status for e in evidence if isinstance(e, RankStatus)}
    assert status == {0: "alive", 1: "missing", 2: "alive"}
    views = rank_views(evidence)
    assert views[0].place == views[2].place == "collective all_reduce"
    envs = [e for e in evidence if isinstance(e, RankEnv)]
    assert {e.variables["rank_variable"] for e in envs} == {"RANK"}


def test_vanished_pid_is_skipped_not_a_crash() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    result = stacks.sample_stacks([stacks.Target(proc.pid, 5)], samples=1)
    assert result.evidence == []
    assert result.skipped[0].source == f"rank 5 pid {proc.pid}"
    assert result.skipped[0].reason == "process ended while being probed"


def test_wrong_job_id_is_one_clear_error() -> None:
    with pytest.raises(discovery.ProbeError, match="no rank process of job 'torchrun-none-such'"):
        discovery.discover("torchrun-none-such")


def test_dataloader_workers_are_not_ranks(hung_job) -> None:
    job = hung_job("dataloader")
    found = discovery.discover(f"torchrun:{job.run_id()}")
    assert [(i.rank, i.pid) for i in found.ranks] == sorted(job.rank_pids.items())
    assert [w.parent_pid for w in found.workers] == [job.rank_pids[0], job.rank_pids[1]]
    assert [a.launcher for a in found.launchers] == ["torchrun agent"]
    evidence, _, _, _ = collect(f"torchrun:{job.run_id()}")
    views = rank_views(evidence)
    assert views[0].activity == "data_loading" and views[1].place == "collective all_reduce"
    detail = next(e.detail for e in evidence if isinstance(e, RankStatus) and e.rank == 0)
    assert "workers=1/1 alive" in detail


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to "
                    "probe as another user")
def test_ptrace_refused_falls_back_to_proc(tmp_path) -> None:
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        code = ("import json; from diagnose.probes.live import stacks; "
                f"r = stacks.sample_stacks([stacks.Target({target.pid}, 0)], samples=1); "
                "print(json.dumps([r.evidence[0].activity, r.evidence[0].text, r.skipped[0].reason, r.notes]))")
        out = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                              sys.executable, "-c", code], capture_output=True, text=True, timeout=20,
                             cwd=tmp_path)
        activity, text, reason, notes = json.loads(out.stdout)
        assert reason.startswith("ptrace not permitted")
        assert activity == "unknown" and text.startswith("no Python stack (ptrace not permitted")
        assert notes == ["ptrace refused: stacks replaced by /proc state and wait channel"]
        assert psutil.Process(target.pid).status() == psutil.STATUS_SLEEPING
    finally:
        target.kill()
        target.wait()


def test_srun_style_ranks_by_slurm_job_id_from_environ(hung_job, monkeypatch) -> None:
    """Ranks that carry only srun's variables, found by SLURM_JOB_ID in /proc (no scontrol here)."""
    monkeypatch.setenv("PATH", "/nonexistent")  # no scontrol: the /proc environ fallback
    job = hung_job("checkpoint", nproc=2, launcher="plain", env={"LIVE_AS_SRUN": "987654321"})
    found = discovery.discover("987654321")
    assert found.kind == "slurm"
    assert [(i.rank, i.rank_var, i.world_size) for i in found.ranks] == [(0, "SLURM_PROCID", 2),
                                                                          (1, "SLURM_PROCID", 2)]
    assert [i.pid for i in found.ranks] == [job.rank_pids[0], job.rank_pids[1]]
    assert found.launchers == [] and found.missing == []


def test_local_probe_returns_a_bundle_not_a_diagnosis(hung_job) -> None:
    """What a node sends back in the Slurm fan-out: the evidence bundle; the engine runs only in the parent."""
    job = hung_job("skip_allreduce", nproc=2, launcher="plain")
    out = run_hang(f"pid:{job.pid}", local=True)
    assert isinstance(out, str)
    data = bundle.from_json(out)
    assert "causes" not in json.loads(out)
    views = rank_views(parse_evidence(data["evidence"]))
    assert views[1].activity == "sleeping" and views[0].place == "collective all_reduce"
    assert any(n.startswith("ranks identified by rank") for n in data["notes"])
