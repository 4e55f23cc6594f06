"""Issue 13's wrong answers of `diagnose logs`, on real torchrun (gloo) jobs and real single-process runs.

- A rank that raised and then ended with SIGABRT (no @record): the traceback is the cause, not the signal.
- A Slurm time limit on top of watchdog timeouts: the job hung, more time is not the first answer.
- A plain traceback or a segfault of one process (no rank anywhere) is still a crash.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e_torch"))

from e2e_cases import SCENARIOS  # noqa: E402
from e2e_harness import Expect, Scenario, diagnose_json, run_scenario  # noqa: E402

ABORT = Scenario("raise-abort", "crash.py", Expect(top1=("rank_failure",)), (), env={"E2E_MODE": "raise_abort"})
# slurmstepd's text when it ends a job at its --time (src/slurmd/slurmstepd/req.c)
SLURM_TIME_LIMIT = "slurmstepd: error: *** JOB 4242 ON node-a CANCELLED AT 2026-12-01T21:50:00 DUE TO TIME LIMIT ***"


def _top(report: dict) -> dict:
    assert report["causes"], "no cause named"
    return report["causes"][0]


def _cites(cause: dict, text: str) -> bool:
    return any(text in (e.get("text") or "") for e in cause["evidence"])


@pytest.mark.torch
@pytest.mark.slow
def test_traceback_before_sigabrt_is_the_cause_in_console_and_in_every_file(tmp_path: Path) -> None:
    reports = {}
    for variant in ("console", "logdir"):
        run = run_scenario(ABORT, variant, tmp_path / variant)
        console = (run.folder / "console.log").read_text(errors="replace")
        assert "SIGABRT" in console and "ValueError: simulated bad batch on rank 1" in console, console[-2000:]
        reports[variant] = diagnose_json(run.folder / "console.log") if variant == "console" else diagnose_json(run.folder)
    for variant, report in reports.items():
        top = _top(report)
        assert (top.get("refines") or top["id"]) == "rank_failure", (variant, top)
        assert top["ranks"] == [1], (variant, top)
        assert "ValueError" in top["summary"], (variant, top["summary"])
        assert _cites(top, "ValueError: simulated bad batch on rank 1 at step 3"), (variant, top["evidence"])
        assert "OOM killer" not in top["fix"], (variant, top["fix"])


@pytest.mark.torch
@pytest.mark.slow
def test_time_limit_after_watchdog_timeouts_is_not_the_first_answer(tmp_path: Path) -> None:
    sc = next(s for s in SCENARIOS if s.name == "f1")
    run = run_scenario(sc, "console", tmp_path / "f1")
    log = run.folder / "console.log"
    assert "Timed out waiting" in log.read_text(errors="replace")
    with log.open("a") as fh:
        fh.write(SLURM_TIME_LIMIT + "\n")
    report = diagnose_json(log)
    ids = [c.get("refines") or c["id"] for c in report["causes"]]
    assert ids[0] != "resource_request", ids
    assert ids[0] == "checkpoint_barrier", ids
    limit = next(c for c in report["causes"] if c["id"] == "resource_request")
    assert limit["confidence"] == "low" and "hung" in limit["summary"], limit


def _diagnose(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(path), "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_single_process_user_error_is_a_crash_of_user_code(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("def step(batch):\n    return batch['label']\n\nstep({'x': 1})\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert run.returncode == 1
    log = tmp_path / "run.log"
    log.write_text(run.stderr)
    top = _top(_diagnose(log))
    assert (top["id"], top["refines"]) == ("user_code_error", "rank_failure"), top
    assert f"{script}:2" in top["summary"] and "KeyError" in top["summary"], top["summary"]
    assert _cites(top, "KeyError: 'label'")


def test_single_process_segfault_is_a_native_crash(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"],
                         capture_output=True, text=True)
    assert run.returncode < 0
    log = tmp_path / "segv.log"
    log.write_text(run.stderr)
    report = _diagnose(log)
    top = _top(report)
    assert (top["id"], top["refines"]) == ("native_crash", "rank_failure"), top
    assert _cites(top, "Fatal Python error: Segmentation fault")
    assert "framework_bug" in [c["id"] for c in report["causes"][1:3]]


def test_library_error_without_rank_is_a_crash_of_an_unknown_rank(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", "import json; json.loads('{')"], capture_output=True, text=True)
    log = tmp_path / "pasted.txt"
    log.write_text(run.stderr)
    top = _top(_diagnose(log))
    assert top["id"] == "rank_failure" and top["ranks"] == [], top
    assert "JSONDecodeError" in top["summary"] and "rank not named" in top["summary"], top["summary"]


@pytest.mark.torch
def test_traceback_cut_before_its_exception_is_read_from_the_failing_frame(tmp_path: Path) -> None:
    script = tmp_path / "save.py"
    script.write_text("import torch\n\ntorch.save({'step': 1}, '/nonexistent-dir/ckpt/step-1.pt')\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback (most recent call last)" in run.stderr
    lines = run.stderr.rstrip("\n").splitlines()
    assert "Error" in lines[-1]
    log = tmp_path / "cut.log"
    log.write_text("\n".join(lines[:-1]) + "\n")  # the paste lost the exception line
    top = _top(_diagnose(log))
    assert top["id"] == "filesystem" and top["confidence"] == "low", top
    assert "serialization.py" in top["summary"], top["summary"]
    assert any("serialization.py" in (e.get("text") or "") for e in top["evidence"])
    whole = tmp_path / "whole.log"
    whole.write_text(run.stderr)
    assert "traceback-cut-at-a-frame" not in [r for c in _diagnose(whole)["causes"] for r in c["rules"]]

