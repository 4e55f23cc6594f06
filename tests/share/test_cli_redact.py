"""Every command and format through the real CLI: nothing planted survives --redact, the diagnosis is unchanged."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.share.conftest import leaks
from tests.share.planted import PLANTED_LOG


def _cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "slurm-42859712.out").write_text(PLANTED_LOG)
    return d


def test_logs_json_text_and_html_leak_nothing(run_dir, tmp_path):
    plain = json.loads(_cli("logs", str(run_dir), "--json"))
    redacted_json = _cli("logs", str(run_dir), "--json", "--redact")
    redacted = json.loads(redacted_json)
    assert leaks(redacted_json) == []
    assert [(c["id"], c["ranks"], c["score"]) for c in redacted["causes"]] == \
        [(c["id"], c["ranks"], c["score"]) for c in plain["causes"]]
    assert plain["causes"], "the planted log must produce a diagnosis for this test to mean anything"
    html = tmp_path / "report.html"
    text = _cli("logs", str(run_dir), "--redact", "--html", str(html))
    assert leaks(text) == []
    assert leaks(html.read_text()) == []


def test_record_is_redacted_by_default(run_dir):
    record = _cli("record", str(run_dir))
    assert "Run record" in record and leaks(record) == []
