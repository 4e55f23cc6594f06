"""Issue 11 item 4: a shell transcript holding two runs (each command followed by its output) is read as two runs."""

from __future__ import annotations

from artifact_helpers import FIXTURES

from diagnose.commands.logs import run_logs
from diagnose.probes.steptime.probe import command_runs


def test_commands_split_a_transcript_into_runs() -> None:
    data = (FIXTURES / "docs/two_runs_transcript.txt").read_bytes()
    assert command_runs(data, "t.txt") == [(1, 1), (5, 4)]
    # one command is one run: nothing to split
    assert command_runs(b"$ torchrun --nproc_per_node 4 train.py\nstep 1 loss 2.0\n", "t.txt") == []
    # a prompt before something that starts no run is not a boundary
    assert command_runs(b"$ nvidia-smi\n$ ls -l\n$ python train.py\n", "t.txt") == []


def test_two_runs_give_scaling_efficiency(tmp_path) -> None:
    (tmp_path / "paste.txt").write_bytes((FIXTURES / "docs/two_runs_transcript.txt").read_bytes())
    report = run_logs([tmp_path])
    assert report.causes[0].id == "communication_bound"
    assert "run 2" in report.causes[0].summary and "N=4" in report.causes[0].summary
