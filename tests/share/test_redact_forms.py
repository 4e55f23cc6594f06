"""The 16 forms of issue 14 through the real CLI: every command and format with --redact leaks none of them,
and identifiers named only in an input (a folder name, an uncited line) are learned from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.share.conftest import leaks
from tests.share.forms import ALL_PLANTED, FORMS, KILLED, WATCHDOG


def cli(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=180,
                          cwd=cwd, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode in (0, 3), proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run folder named after the partition; every form in the console log, as the cited lines too."""
    root = tmp_path_factory.mktemp("forms") / "mlq77-grp-ai42-runs" / "job-trnhost17"
    root.mkdir(parents=True)
    lines = [WATCHDOG, KILLED]
    for _, line, _ in FORMS:
        lines += [line, f"[rank0]:[E1129 10:02:12.000 ProcessGroupNCCL.cpp:632] [Rank 0] {line}"]
    (root / "console.log").write_text("\n".join(lines) + "\n")
    (root / "gpu412-headnode-4-step.log").write_bytes(b"\0\1binary")  # a skipped input named after hosts
    reports = root / "diagnose-reports"
    reports.mkdir()
    for rank in (0, 1):
        evidence = [{"kind": "log_line", "signature": "python_exception", "rank": rank,
                     "text": f"RuntimeError: {line}", "provenance": {"probe": "hook", "host": "trnhost17",
                                                                       "pid": 622423 + rank}}
                    for _, line, _ in FORMS]
        (reports / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "attempt": 0, "evidence": evidence}))
    return root


def _check(text: str, what: str) -> None:
    found = leaks(text, ALL_PLANTED)
    context = [text[max(0, text.find(p) - 80):text.find(p) + 40] for p in found]
    assert found == [], f"{what} leaks: {context}"


def test_logs_every_format(run_dir: Path, tmp_path: Path) -> None:
    plain = json.loads(cli("logs", str(run_dir), "--json"))
    assert plain["causes"] and leaks(json.dumps(plain), ALL_PLANTED), "unredacted, the forms must show"
    red = json.loads(cli("logs", str(run_dir), "--json", "--redact", "--html", str(tmp_path / "r.html")))
    _check(json.dumps(red), "logs --json")
    _check((tmp_path / "r.html").read_text(), "logs --html")
    assert [(c["id"], c["ranks"], c["score"]) for c in red["causes"]] == \
        [(c["id"], c["ranks"], c["score"]) for c in plain["causes"]]
    _check(cli("logs", str(run_dir), "--redact"), "logs text")
    _check(cli("logs", str(run_dir), "--markdown"), "logs --markdown")


def test_logs_from_stdin_and_relative_paths(run_dir: Path) -> None:
    proc = subprocess.run(f"cat console.log | {sys.executable} -m diagnose logs - --json --redact", shell=True,
                          capture_output=True, text=True, cwd=run_dir, timeout=180)
    _check(proc.stdout, "logs - --json")
    rel = cli("logs", ".", "--redact", cwd=run_dir)
    _check(rel, "logs . text")
    top = run_dir.parent.parent  # the folder names (partition, account, host) appear in every source
    named = cli("logs", "mlq77-grp-ai42-runs/job-trnhost17", "--json", "--redact", cwd=top)
    assert "path/to/project/console.log" in named
    _check(named, "logs DIR --json (relative)")


def test_other_commands(run_dir: Path) -> None:
    _check(cli("record", str(run_dir)), "record")
    _check(cli("report", str(run_dir / "diagnose-reports"), "--json", "--redact"), "report --json")
    _check(cli("report", str(run_dir / "diagnose-reports"), "--markdown"), "report --markdown")
    scaling = cli("scaling", str(run_dir), "--json", "--redact")
    assert "step.log" in scaling  # the skipped file is listed, its host names are not
    _check(scaling, "scaling --json")
    _check(cli("scaling", str(run_dir), "--redact"), "scaling text")


def test_hang_note_keeps_ranks_and_hides_pids_and_job() -> None:
    from diagnose.output.redact import redact_report
    from diagnose.output.report import Report

    report = Report(command="hang", notes=["job '4242871' read as a Slurm job id",
                                           "found 2 rank processes (rank:pid 0:1990, 1:1991); launcher pid 1989"])
    notes = redact_report(report.to_json_dict())["notes"]
    assert "4242871" not in notes[0] and "<job>" in notes[0]
    assert "(rank:pid 0:<pid-1>, 1:<pid-2>)" in notes[1] and "1989" not in notes[1]
