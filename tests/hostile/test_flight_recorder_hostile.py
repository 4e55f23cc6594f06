"""Flight-recorder dumps: malformed ones are skipped with a note, oversized ones are not read, and gloo
dumps (every entry "scheduled") still name the rank that issued a different collective."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_util import run_cli

from diagnose.commands.logs import run_logs

GOOD_ENTRY = {"collective_seq_id": 1, "profiling_name": "gloo:all_reduce", "state": "scheduled",
              "process_group": ["0", "default_pg"], "input_sizes": [[16]], "time_created_ns": 1}
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB"


def _malformed() -> dict[str, bytes]:
    base = {"version": "2.5", "pg_config": {"0": {"ranks": [0, 1]}}, "entries": [GOOD_ENTRY]}
    out: dict[str, bytes] = {}

    def js(name: str, **change: object) -> None:
        out[name] = json.dumps({**base, **change}).encode()

    js("string_time", entries=[{**GOOD_ENTRY, "time_created_ns": "yesterday"}])
    js("pg_config_list", pg_config=[{"ranks": [0, 1]}])
    js("huge_int", entries=[{**GOOD_ENTRY, "collective_seq_id": 10 ** 4000}])
    js("bad_ranks", pg_config={"0": {"ranks": {"a": 1}}})
    js("entry_list", entries=[[1, 2, 3]])
    js("state_int", entries=[{**GOOD_ENTRY, "state": 7}])
    out["surrogate"] = json.dumps({**base, "entries": [{**GOOD_ENTRY, "profiling_name": "\ud800"}]}).encode()
    out["bytes_sizes"] = pickle.dumps({**base, "entries": [{**GOOD_ENTRY, "input_sizes": [b"\x00\x01"]}]})
    out["huge_int_pickle"] = pickle.dumps({**base, "entries": [{**GOOD_ENTRY, "collective_seq_id": 10 ** 5000}]})
    out["truncated"] = json.dumps(base).encode()[:-5]
    out["deep"] = b'{"entries": [], "pg_config": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return out


@pytest.mark.parametrize("name", sorted(_malformed()))
def test_malformed_dump_is_skipped_with_a_note(name, tmp_path):
    (tmp_path / f"nccl_trace_rank_1_{name}.json").write_bytes(_malformed()[name])
    (tmp_path / "rank0.log").write_text(f"[rank0]: {OOM}\n")
    report = run_logs([tmp_path])
    assert report.causes[0].id == "per_rank_batch_too_large"
    said = [*report.notes, *(s.reason for s in report.skipped)]
    # the run never ends on a dump; those that still make sense are read, the others are named
    assert any("flight-recorder" in n for n in said) or name in (
        "string_time", "state_int", "bad_ranks", "surrogate", "entry_list", "huge_int"), said


def test_sparse_6gb_dump_is_not_read(tmp_path):
    path = tmp_path / "rank0.json"
    with path.open("wb") as fh:
        fh.write(b'{"entries": [], "pg_config": {}, ' + b" " * 100)
        fh.truncate(6 << 30)
    run = run_cli("logs", tmp_path, "--json")
    assert run.rc == 0 and run.peak_rss < 1 << 30, run.stderr[-1000:]
    assert any("larger than" in s["reason"] for s in run.json()["skipped"])


@pytest.mark.torch
def test_gloo_dumps_name_the_rank_that_issued_another_collective(tmp_path):
    pytest.importorskip("torch")
    job = Path(__file__).with_name("fr_mismatch_job.py")
    env = {**os.environ, "TORCH_FR_BUFFER_SIZE": "2000", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "3", str(job), str(tmp_path)],
                   env=env, capture_output=True, timeout=180)
    assert len(list(tmp_path.glob("nccl_trace_rank_*"))) == 3, "the job wrote no flight-recorder dumps"
    report = run_logs([tmp_path])
    top = report.causes[0]
    assert (top.id, top.ranks) == ("collective_mismatch", [2]), [(c.id, c.ranks) for c in report.causes]
    assert any("broadcast" in e.text and e.rank == 2 for e in top.evidence)
