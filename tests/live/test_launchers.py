"""Discovery under every launcher that runs here: the right ranks, said how they were identified, the right culprit.

DeepSpeed and Lightning are not installed here: their launchers are emulated with the process
layout, environment and command lines they really leave (tests/live/conftest.py, jobs/launchers.py).
"""

from __future__ import annotations

import pytest
from test_probe_live import assert_unharmed

from diagnose.commands.hang import run_hang
from diagnose.probes.live import discovery, stacks

pytestmark = pytest.mark.torch

LAUNCHERS = [
    # launcher, words that must say how the ranks were identified, launcher role expected
    ("spawn", "py-spy locals: process index i=", "mp.spawn / multiprocessing"),
    ("mp-spawn", "py-spy locals: argument rank=", "mp.spawn / multiprocessing"),
    ("mp-forkserver", "py-spy locals: argument rank=", "mp.spawn / multiprocessing"),
    ("mp-fork", "py-spy locals: argument rank=", "mp.spawn / multiprocessing"),
    ("shell", "argument '--rank ", "shell"),
    ("launch", "RANK in its environment", "torchrun agent"),
    ("deepspeed", "RANK in its environment", "deepspeed launcher"),
    ("lightning", "Lightning's subprocess launcher", None),
]


@pytest.mark.parametrize(("launcher", "how", "role"), LAUNCHERS, ids=[x[0] for x in LAUNCHERS])
def test_skipped_collective_under_each_launcher(hung_job, launcher, how, role) -> None:
    job = hung_job("skip_allreduce", nproc=3, launcher=launcher)
    found = discovery.discover(f"pid:{job.pid}")
    assert sorted((i.rank, i.pid) for i in found.ranks) == sorted(job.rank_pids.items())
    if role is not None:
        assert role in [i.launcher for i in found.launchers]
    targets = [stacks.Target(pid, rank) for rank, pid in job.rank_pids.items()]
    before = {s.rank: s.activity for s in stacks.sample_stacks(targets, samples=1).evidence}
    report = run_hang(f"pid:{job.pid}")
    top = report.causes[0]
    assert (top.id, top.ranks) == ("collective_mismatch", [1]), [(c.id, c.ranks, c.summary) for c in report.causes]
    line = next(n for n in report.notes if n.startswith("ranks identified by"))
    assert how in line, line
    assert_unharmed(job, before)
