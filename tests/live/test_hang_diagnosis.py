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
    assert_unharmed(job, before)
