"""The CLI starts without torch, reports bad input with exit 2, and diagnoses a bundled example."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=120)


def test_help_does_not_import_torch():
    code = "import sys, diagnose.cli\ntry:\n    diagnose.cli.main(['--help'])\nexcept SystemExit: pass\nprint('torch' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip().endswith("False False")


def test_missing_path_exits_2():
    proc = run("logs", "/nonexistent/path", "--json")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_demo_example_names_the_killed_rank():
    proc = run("logs", str(ROOT / "examples" / "oom-killed-rank"), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    top = report["causes"][0]
    assert top["id"] == "rank_failure" and top["ranks"] == [2]
    assert any("SIGKILL" in e["text"] for e in top["evidence"])


def test_bad_inputs_are_skipped_not_fatal(tmp_path):
    (tmp_path / "core.bin").write_bytes(b"\0\1\2" * 5000)
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "latin1.log").write_bytes("caf\xe9 RuntimeError: CUDA error: out of memory\n".encode("latin-1"))
    import os
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "loop").symlink_to(tmp_path)
    proc = run("logs", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    reasons = {Path(s["source"]).name: s["reason"] for s in report["skipped"]}
    assert reasons["core.bin"] == "binary file" and "special file" in reasons["pipe"]
    assert report["causes"][0]["id"] == "per_rank_batch_too_large"


def test_schema_is_versioned():
    proc = run("schema")
    assert json.loads(proc.stdout)["$id"] == "diagnose.report/1"
