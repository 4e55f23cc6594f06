"""`diagnose logs` opens each input file once: logs, step-time lines, evidence files, error files and
flight-recorder dumps all come out of one read; content parsers see the same bytes."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from diagnose.commands.logs import collect_logs
from diagnose.probes.logs.content import (
    ContentResult,
    FileView,
    register_content_parser,
    unregister_content_parser,
)
from diagnose.probes.logs.probe import LogProbe

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB"
_COUNT_OPENS = """
import collections, json, os, sys
root = os.path.realpath(sys.argv[1])
opens = collections.Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if path.startswith(root + os.sep):
            opens[os.path.relpath(path, root)] += 1
sys.addaudithook(hook)
from diagnose.cli import main
try:
    main(["logs", root, "--json"])
except SystemExit:
    pass
sys.stdout.flush()
sys.stderr.write("OPENS=" + json.dumps(opens) + "\\n")
"""


def _run_folder(root: Path) -> None:
    (root / "rank0.log").write_text(f"[rank0]: step 10 loss: 2.5 step_time: 0.31\n[rank0]: {OOM}\n")
    (root / "steps.log").write_text("".join(f"step {i} loss: {3 - i / 10:.2f} step_time: 0.{i + 1}\n" for i in range(8)))
    (root / "table.md").write_text("| metric | 1 gpu | 2 gpus |\n|---|---|---|\n| step time | 0.5 s | 0.3 s |\n")
    (root / "rank1.log.gz").write_bytes(gzip.compress(f"[rank1]: {OOM}\n".encode()))
    (root / "error.json").write_text(json.dumps({"message": {"message": "RuntimeError: boom", "extraInfo": {
        "py_callstack": "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nRuntimeError: boom",
        "timestamp": "1700000000"}}}))
    (root / "nccl_trace_rank_0.json").write_text(json.dumps({"version": "2.5", "pg_config": {"0": {"ranks": [0, 1]}},
        "entries": [{"collective_seq_id": 1, "profiling_name": "gloo:all_reduce", "state": "scheduled"}]}))
    (root / "evidence.jsonl").write_text(json.dumps({"kind": "rank_status", "rank": 1, "status": "exited",
                                                     "provenance": {"probe": "live"}}) + "\n")


def test_each_input_file_is_opened_once(tmp_path):
    _run_folder(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _COUNT_OPENS, str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("OPENS="))
    opens = json.loads(line[len("OPENS="):])
    report = json.loads(proc.stdout)
    assert report["causes"][0]["id"] == "per_rank_batch_too_large"
    names = {p.name for p in tmp_path.iterdir()}
    assert set(opens) == names, opens
    assert all(n == 1 for n in opens.values()), opens


def test_step_time_comes_from_the_same_pass(tmp_path):
    _run_folder(tmp_path)
    evidence, skipped, notes = collect_logs([tmp_path])
    steps = [e for e in evidence if e.kind == "step_metric"]
    by_source = {Path(e.provenance.source).name for e in steps}
    assert {"steps.log", "rank0.log", "table.md"} <= by_source
    assert sorted(e.step for e in steps if e.provenance.source.endswith("steps.log")) == list(range(8))
    table = [e for e in steps if e.provenance.source.endswith("table.md")]
    assert {e.run.rsplit(":", 1)[-1] for e in table} == {"1 gpu", "2 gpus"} and {e.step_time for e in table} == {0.5, 0.3}
    assert not skipped


class _Recorder:
    name = "test-recorder"

    def __init__(self, fail: bool = False) -> None:
        self.views: list[FileView] = []
        self.fail = fail

    def wants(self, view: FileView) -> bool:
        return view.path.endswith(".log")

    def parse(self, view: FileView) -> ContentResult:
        self.views.append(view)
        if self.fail:
            raise ValueError("parser bug")
        return ContentResult(notes=[f"{view.path}: seen {len(view.data)} bytes"])


def test_content_parsers_see_each_file_once_with_what_the_scan_found(tmp_path):
    _run_folder(tmp_path)
    recorder = _Recorder()
    result = LogProbe(workers=1, parsers=[recorder]).collect([tmp_path])
    seen = {Path(v.path).name: v for v in recorder.views}
    assert set(seen) == {"rank0.log", "steps.log"}
    assert "cuda_oom" in seen["rank0.log"].signatures and seen["rank0.log"].rank == 0
    assert seen["rank0.log"].complete and seen["rank0.log"].text.endswith(OOM + "\n")
    assert any(n.endswith("seen 42 bytes") or "seen" in n for n in result.notes)


def test_a_failing_parser_is_a_note_and_the_run_goes_on(tmp_path):
    _run_folder(tmp_path)
    register_content_parser(_Recorder(fail=True))
    try:
        evidence, _, notes = collect_logs([tmp_path])
    finally:
        unregister_content_parser("test-recorder")
    assert any("content parser 'test-recorder' failed: ValueError: parser bug" in n for n in notes)
    assert any(e.kind == "log_line" and e.signature == "cuda_oom" for e in evidence)
    assert any(e.kind == "step_metric" for e in evidence)
