"""The hook hands the exception on unchanged: traceback text, exit status, elastic error file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.evidence import parse_evidence

JOB = Path(__file__).parent / "jobs" / "raise_job.py"


def run(tmp: Path, hook: bool, record: str = "none", **env: str) -> subprocess.CompletedProcess:
    tmp.mkdir(parents=True, exist_ok=True)
    full = {**os.environ, "HOOK": "1" if hook else "0", "RECORD": record, "REPORT_DIR": str(tmp / "reports"),
            "TORCHELASTIC_ERROR_FILE": str(tmp / "error.json"), **env}
    return subprocess.run([sys.executable, str(JOB)], env=full, cwd=tmp, capture_output=True, text=True, timeout=60)


def without_hook_lines(stderr: str) -> str:
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("[diagnose]"))


def test_plain_traceback_byte_for_byte(tmp_path):
    hooked, plain = run(tmp_path / "h", True), run(tmp_path / "p", False)
    assert hooked.returncode == plain.returncode == 1
    assert hooked.stdout == plain.stdout == "step 0\n"
    assert without_hook_lines(hooked.stderr) == plain.stderr
    assert "During handling of the above exception, another exception occurred" in plain.stderr
    assert "[diagnose] rank 0: BatchError: simulated bad batch" in hooked.stderr
    report = json.loads((tmp_path / "h" / "reports" / "rank-0.json").read_text())
    items = parse_evidence(report["evidence"])  # the stdlib-built dicts validate against the models
    types = [i.fields["type"] for i in items if i.kind == "log_line" and i.signature == "hook_exception"]
    assert types == ["__main__.BatchError", "KeyError", "IndexError"]


@pytest.mark.torch
@pytest.mark.parametrize("record", ["diagnose", "elastic", "both", "both-inner", "watch"])
def test_traceback_and_error_file_with_record(tmp_path, record):
    hooked, plain = run(tmp_path / "h", True, record), run(tmp_path / "p", False, record)
    assert hooked.returncode == plain.returncode == 1
    assert without_hook_lines(hooked.stderr) == plain.stderr
    assert "BatchError: simulated bad batch on rank 1 at step 3" in plain.stderr
    assert "diagnose/hook" not in hooked.stderr
    if record != "diagnose" and record != "watch":
        ours, theirs = (json.loads((tmp_path / d / "error.json").read_text())["message"] for d in ("h", "p"))
        assert ours["message"] == theirs["message"] == "BatchError: simulated bad batch on rank 1 at step 3"
        assert ours["extraInfo"]["py_callstack"] == theirs["extraInfo"]["py_callstack"]
        assert "errors/__init__.py" in ours["extraInfo"]["py_callstack"]  # elastic's own frame, as before
    assert (tmp_path / "h" / "reports" / "rank-0.json").is_file()


def test_without_torch_and_without_pydantic(tmp_path):
    hooked = run(tmp_path / "h", True, NO_TORCH="1", NO_PYDANTIC="1")
    plain = run(tmp_path / "p", False, NO_TORCH="1", NO_PYDANTIC="1")
    assert hooked.returncode == plain.returncode == 1
    assert without_hook_lines(hooked.stderr) == plain.stderr
    report = json.loads((tmp_path / "h" / "reports" / "rank-0.json").read_text())
    assert any("in-process diagnosis unavailable" in n for n in report["notes"])
    assert {e.kind for e in parse_evidence(report["evidence"])} >= {"log_line", "stack_sample", "rank_exit",
                                                                       "rank_env", "memory_state"}
