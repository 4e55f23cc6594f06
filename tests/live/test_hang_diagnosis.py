"""`run_hang` against real hung jobs: the right cause and culprit rank, with the job left as it was."""

from __future__ import annotations

import pytest
from test_probe_live import assert_unharmed

from diagnose.commands.hang import run_hang
from diagnose.probes.live import stacks

pytestmark = pytest.mark.torch

SCENARIOS = [
    # scenario, ranks, launcher, ranks that report ready, cause, culprit
    ("skip_allreduce", 3, "torchrun", None, "collective_mismatch", [1]),
    ("checkpoint", 2, "torchrun", None, "checkpoint_barrier", [0]),
    ("uneven", 2, "torchrun", None, "uneven_dataloader", [1]),
    ("mismatch", 3, "plain", None, "collective_mismatch", [1]),
    ("dead", 3, "plain", 2, "rank_failure", [1]),
    ("dataloader", 2, "torchrun", None, "input_pipeline_bound", [0]),
    ("slow_before", 3, "torchrun", None, "checkpoint_barrier", [1]),
    ("skip_continue", 3, "torchrun", None, "collective_mismatch", [1]),
    ("slow_compute", 3, "plain", None, "checkpoint_barrier", [1]),
]


@pytest.mark.parametrize(("scenario", "nproc", "launcher", "ready", "cause", "culprits"), SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])
def test_hang_is_diagnosed(hung_job, scenario, nproc, launcher, ready, cause, culprits) -> None:
    job = hung_job(scenario, nproc=nproc, launcher=launcher, ready=ready)
    targets = [stacks.Target(pid, rank) for rank, pid in job.rank_pids.items()]
    before = {s.rank: s.activity for s in stacks.sample_stacks(targets, samples=1).evidence}
    report = run_hang(f"pid:{job.pid}", timeout=10)
    assert report.causes, report.notes
    top = report.causes[0]
    assert (top.id, top.ranks) == (cause, culprits), [(c.id, c.ranks, c.summary) for c in report.causes]
    assert any(e.rank == culprits[0] for e in top.evidence), top.evidence
    assert report.command == "hang" and any("launcher pid" in n for n in report.notes)
    assert not any(s.first_failure for s in report.rank_states)
    assert_unharmed(job, before)


def test_slow_rank_is_named_by_its_frame_not_told_to_make_the_collective_unconditional(hung_job) -> None:
    job = hung_job("slow_before", nproc=2)
    top = run_hang(f"pid:{job.pid}").causes[0]
    assert (top.id, top.ranks) == ("checkpoint_barrier", [1])
    assert "slow_before (hang_job.py:" in top.summary and "unconditional" not in (top.fix or "")


@pytest.mark.parametrize("scenario", ["healthy", "healthy_slow"])
def test_healthy_job_is_progressing_and_nobody_is_accused(hung_job, scenario) -> None:
    job = hung_job(scenario, nproc=3)
    report = run_hang(f"pid:{job.pid}")
    assert not [c for c in report.causes if c.confidence == "high" or c.ranks], [
        (c.id, c.ranks, c.confidence) for c in report.causes]
    line = next(n for n in report.notes if n.startswith("the job is progressing"))
    assert all(f"rank {r}:" in line for r in range(3)), line
    assert not any(s.first_failure for s in report.rank_states)
    assert job.proc.poll() is None
