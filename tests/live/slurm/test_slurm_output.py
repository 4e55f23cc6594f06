"""The job's own output files (Slurm's StdOut/StdErr) are read: a rank that died with a traceback."""

from __future__ import annotations

import json

import pytest

from diagnose.commands.hang import run_hang

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def test_dead_rank_traceback_from_job_output(slurm_submit, slurm_cluster, tmp_path) -> None:
    job = slurm_submit("hang_srun.sbatch", tmp_path / "marks", nranks=1, scenario="dead_traceback")
    report = run_hang(f"slurm:{job.id}", save=tmp_path / "saved")
    top = report.causes[0]
    assert (top.id, top.ranks) == ("rank_failure", [1]), [(c.id, c.ranks, c.summary) for c in report.causes]
    assert any(e.text == "rank 1 of 2: no process on this host" for e in top.evidence), top.evidence
    records = [json.loads(line) for line in (tmp_path / "saved" / "evidence.jsonl").read_text().splitlines()]
    from_output = [r for r in records if r["kind"] == "log_line"
                   and r["provenance"]["source"] == str(job.output)]
    assert any(r["rank"] == 1 and "raised on purpose" in r["text"] for r in from_output), from_output
    assert any(f"job-{job.id}.out): " in n and "matching line" in n for n in report.notes), report.notes
    assert slurm_cluster.state(job.id) == "RUNNING"
