"""Flight-recorder dumps from a real gloo job: the rank that never enqueued the collective is the culprit."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.probes.logs.flight_recorder import read_dump

JOB = Path(__file__).with_name("fr_job.py")


@pytest.fixture(scope="module")
def fr_dumps(tmp_path_factory):
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("fr")
    env = {**os.environ, "TORCH_FR_BUFFER_SIZE": "2000", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(JOB), str(out)],
                   env=env, capture_output=True, timeout=120)
    dumps = sorted(out.glob("nccl_trace_rank_*"))
    assert len(dumps) == 2, "the job wrote no flight-recorder dumps"
    return out


@pytest.mark.torch
def test_pickle_dumps_name_the_rank_that_skipped(fr_dumps):
    report = run_logs([fr_dumps])
    top = report.causes[0]
    assert (top.id, top.ranks) == ("collective_mismatch", [1])
    assert any("last enqueued 3" in e.text and e.rank == 1 for e in top.evidence)


@pytest.mark.torch
def test_json_dumps_read_the_same(fr_dumps, tmp_path):
    for path in fr_dumps.glob("nccl_trace_rank_*"):
        dump = read_dump(path)
        (tmp_path / f"{path.name}.json").write_text(json.dumps(dump))
    report = run_logs([tmp_path])
    assert (report.causes[0].id, report.causes[0].ranks) == ("collective_mismatch", [1])


@pytest.mark.torch
def test_one_rank_missing_is_not_a_crash(fr_dumps, tmp_path):
    (tmp_path / "nccl_trace_rank_0").write_bytes((fr_dumps / "nccl_trace_rank_0").read_bytes())
    report = run_logs([tmp_path])
    assert report.ranks.seen == [0] and report.ranks.world_size == 2 and report.ranks.missing == [1]


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch planted-by-pickle",))


def test_hostile_dump_is_read_without_running_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dump = {"version": "2.5", "pg_config": {"0": {"ranks": "[0, 1]"}}, "entries": [_Boom()]}
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(dump))
    report = run_logs([tmp_path])
    assert not (tmp_path / "planted-by-pickle").exists()
    assert report.ranks.world_size == 2
