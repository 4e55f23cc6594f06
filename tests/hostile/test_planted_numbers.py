"""A number written in the input never drives memory: planted ranks and world sizes cost what the ranks
actually seen cost, become a note, and leave the diagnosis as it is without them (issue 14)."""

from __future__ import annotations

import json
import pickle
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_util import AS_LIMIT, run_cli

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB"
PEAK = 1 << 30


def _dump(ranks: list[int]) -> str:
    return json.dumps({"version": "2.5", "pg_config": {"0": {"desc": "default_pg", "ranks": ranks}}, "entries": [
        {"collective_seq_id": 1, "profiling_name": "gloo:all_reduce", "state": "completed", "process_group": ["0", ""]}]})


def _hook_report(world: str) -> str:
    return json.dumps({"schema": "diagnose.report/1", "evidence": [
        {"kind": "rank_env", "rank": 0, "variables": {"WORLD_SIZE": world, "RANK": "0"},
         "provenance": {"probe": "hook", "source": "environment"}}]})


CASES = {
    "line-rank": ({"console.log": f"[rank0]: {OOM}\n[rank{{n}}]: RuntimeError: boom\n"}, "100000000", "1"),
    "member-banner": ({"console.log": f"initializing distributed: GLOBAL_RANK: 1, MEMBER: 1/{{n}}\n[rank0]: {OOM}\n"},
                      "300000000", "1"),
    "flight-recorder": ({"nccl_trace_rank_0.json": "{dump}", "console.log": f"[rank0]: {OOM}\n"}, "100000000", "0"),
    "hook-world-size": ({"rank-0.json": "{hook}", "console.log": f"[rank0]: {OOM}\n"}, "999999999", "1"),
    "store-clients": ({"console.log": f"[rank0]: {OOM}\nWaiting in store based barrier to initialize process group "
                       "for rank: 0, key: store_based_barrier_key:1 (world_size={n}, worker_count=1, "
                       "timeout=0:30:00)\n"}, "99999999999", "1"),
}


def _write(folder: Path, files: dict[str, str], n: str) -> None:
    folder.mkdir()
    for name, text in files.items():
        if text == "{dump}":
            text = _dump([0, int(n)])
        elif text == "{hook}":
            text = _hook_report(n)
        else:
            text = text.replace("{n}", n)
        (folder / name).write_text(text)


def _answer(report: dict) -> list[tuple[str, list[int]]]:
    return [(c["id"], c["ranks"]) for c in report["causes"]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_planted_number_is_a_note_not_a_range(case, tmp_path):
    files, huge, small = CASES[case]
    _write(tmp_path / "planted", files, huge)
    _write(tmp_path / "plain", files, small)
    planted = run_cli("logs", tmp_path / "planted", "--json")
    assert planted.rc == 0, planted.stderr[-2000:]
    assert planted.peak_rss < PEAK, f"peak RSS {planted.peak_rss >> 20} MiB"
    report = planted.json()
    assert any(huge[:-1] in n and ("implausible" in n or "beyond" in n) for n in report["notes"]), report["notes"]
    assert len(report["ranks"]["missing"]) < 10 and (report["ranks"]["world_size"] or 0) < 10
    plain = run_cli("logs", tmp_path / "plain", "--json").json()
    assert _answer(report)[:1] == _answer(plain)[:1]
    assert _answer(report)[0][0] == "per_rank_batch_too_large"
    text = run_cli("logs", tmp_path / "planted")  # the text report and its rank grid stay sparse too
    assert text.rc == 0 and text.peak_rss < PEAK


def test_pickled_dump_with_a_huge_rank_is_sparse(tmp_path):
    dump = {"version": "2.5", "pg_config": {"0": {"ranks": "[0, 100000000]"}},
            "entries": [{"collective_seq_id": 1, "profiling_name": "gloo:all_reduce", "state": "scheduled"}]}
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(dump))
    run = run_cli("logs", tmp_path, "--json")
    assert run.rc == 0 and run.peak_rss < PEAK
    assert any("implausible world size 100000001" in n for n in run.json()["notes"])


def test_255_watchdog_lines_give_every_rank(tmp_path):
    """Issue 13: world size and victims never come from a quote cap (255 ranks, one console log)."""
    lines = [f"[rank{r}]:[E1129 10:12:14.162555850 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
             f"operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
             f"ran for 600081 milliseconds before timing out." for r in range(1, 256)]
    (tmp_path / "console.log").write_text("\n".join(lines * 2) + "\n")
    report = run_cli("logs", tmp_path, "--json").json()
    assert report["ranks"]["seen"] == list(range(1, 256))
    assert report["ranks"]["world_size"] == 256 and report["ranks"]["missing"] == [0]
    assert any("more 'nccl_watchdog_timeout' lines not kept" in n for n in report["notes"])


def test_slurm_nodelist_range_is_expanded_lazily():
    """`node[0-99999999999]` in a nodelist the redactor learns is expanded to a bounded number of names."""
    code = ("from diagnose.output.redact_patterns import MAX_NODES, expand_nodelist\n"
            "hosts = expand_nodelist('node[0-99999999999]')\n"
            "assert len(hosts) == MAX_NODES and hosts[:2] == ['node0', 'node1'], hosts[:3]\n"
            "assert expand_nodelist('m9g-1-[3-4,7]') == ['m9g-1-3', 'm9g-1-4', 'm9g-1-7']\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT)))
    assert proc.returncode == 0, proc.stderr[-2000:]
