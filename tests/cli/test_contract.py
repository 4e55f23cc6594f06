"""The CLI contract scripts rely on (CONTRACT.md): exit codes, stdin, refused flags, pipes, help, version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "oom-killed-rank"


def cli(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diagnose", *args], input=stdin, capture_output=True,
                          timeout=180, env={**os.environ, **(env or {})})


def test_version_is_the_package_version():
    from importlib.metadata import version

    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"diagnose {version('torchdist-diagnose')}"


def test_every_argument_has_help_and_every_command_an_example():
    import argparse

    from diagnose.cli import _parser

    parser = _parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subs.choices) >= {"logs", "hang", "preflight", "checkpoint", "scaling", "report", "record",
                                 "schema", "rules", "completion"}
    for name, sub in subs.choices.items():
        assert "example:\n  diagnose " + name in sub.format_help(), name
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_unknown_symptom_lists_the_valid_words():
    proc = cli("logs", str(EXAMPLE), "--symptom", "stuck")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "'stuck'" in err
    for word in ("hang", "slow", "oom", "crash", "diverged", "resume", "hang_mid_run", "resume_mismatch"):
        assert word in err


def test_fail_on_exits_3_only_at_that_confidence():
    high = cli("logs", str(EXAMPLE), "--json", "--fail-on", "high")
    assert high.returncode == 3, high.stderr
    assert json.loads(high.stdout)["causes"][0]["confidence"] == "high"  # the report is still printed
    assert cli("logs", str(EXAMPLE), "--json").returncode == 0


def test_fail_on_stays_0_when_nothing_is_that_sure(tmp_path):
    (tmp_path / "train.log").write_text("epoch 1 loss 0.5\nepoch 2 loss 0.4\n")
    proc = cli("logs", str(tmp_path), "--fail-on", "low")
    assert proc.returncode == 0, proc.stderr


def test_standard_input_is_read_and_named(tmp_path):
    data = (EXAMPLE / "console.log").read_bytes()
    proc = cli("logs", "-", "--json", stdin=data)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    top = report["causes"][0]
    assert top["id"] == "rank_failure" and top["ranks"] == [2]
    assert {e["source"] for e in top["evidence"]} == {"<stdin>"}


@pytest.mark.parametrize("args, words", [
    (["logs", str(EXAMPLE), "--json", "--markdown"], "choose one"),
    (["hang", "--job", "1", "--local", "--rules", "/tmp"], "--rules is not used by --local"),
    (["logs", str(EXAMPLE), "--no-redact"], "--no-redact"),
    (["logs"], "PATH"),
    (["record", str(EXAMPLE), "--json"], "unrecognized arguments: --json"),
])
def test_a_flag_the_command_cannot_honour_is_refused(args, words):
    proc = cli(*args)
    assert proc.returncode == 2 and words in proc.stderr.decode() and proc.stdout == b""


def test_unwritable_html_is_exit_2_with_the_report_printed(tmp_path):
    locked = tmp_path / "no-such-dir" / "report.html"
    proc = cli("logs", str(EXAMPLE), "--html", str(locked))
    assert proc.returncode == 2
    assert proc.stdout.decode().startswith("rank 2: rank_failure (SIGKILL)")
    assert "cannot write --html" in proc.stderr.decode() and "Traceback" not in proc.stderr.decode()


def test_a_closed_pipe_is_not_an_error(tmp_path):
    big = tmp_path / "many"
    big.mkdir()
    for r in range(300):  # a long report: many skipped inputs and cited lines
        (big / f"rank{r}.log").write_bytes(b"\0binary" * 10)
    (big / "console.log").write_bytes((EXAMPLE / "console.log").read_bytes())
    proc = subprocess.run(f"{sys.executable} -m diagnose logs --json {big} | head -c 10", shell=True,
                          capture_output=True, timeout=180)
    assert proc.returncode == 0
    text = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m diagnose logs {big} | head -1"],
                          capture_output=True, timeout=180)
    assert text.returncode == 0, text.stderr
    assert b"BrokenPipe" not in text.stderr and b"Exception" not in text.stderr


def test_preflight_exits_3_when_a_check_fails():
    import socket

    with socket.socket() as s:  # the rendezvous port is taken: the port check fails
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = cli("preflight", "--port", str(port), "--json")
    report = json.loads(proc.stdout)
    failed = [c for c in report["evidence"] if c["kind"] == "host_check" and c["status"] == "fail"]
    assert failed, "the taken port must fail a check for this test to mean anything"
    assert proc.returncode == 3


def test_completion_scripts_come_from_the_parser():
    bash = cli("completion", "bash").stdout.decode()
    assert "complete" in bash and "--fail-on" in bash and "checkpoint" in bash
    check = subprocess.run(["bash", "-n"], input=bash.encode(), capture_output=True)
    assert check.returncode == 0, check.stderr
    zsh = cli("completion", "zsh").stdout.decode()
    assert "#compdef diagnose" in zsh and "--markdown" in zsh
