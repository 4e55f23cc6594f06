"""The hook is light and harmless: stdlib-only import, a strict time bound, no failure of its own escapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HEAVY = ("pydantic", "torch", "networkx", "yaml", "rich", "psutil", "hyperscan", "numpy")


def python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})


def test_import_and_install_load_only_the_standard_library(tmp_path):
    out = python(f"""
        import sys
        import diagnose
        diagnose.install(watchdog_timeout=60)
        diagnose.step()
        with diagnose.watch():
            pass
        diagnose.record(lambda: None)()
        print(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r}))
        print(sorted(m for m in sys.modules if m.startswith("diagnose")))
    """, tmp_path)
    assert out.returncode == 0, out.stderr
    heavy, ours = out.stdout.splitlines()
    assert heavy == "[]"
    assert "diagnose.hook.api" in ours and "diagnose.evidence" not in ours and "diagnose.engine" not in ours


def test_capture_is_bounded(tmp_path):
    code = """
        import time, diagnose
        from diagnose.hook import torchstate
        torchstate.flight_recorder = lambda rank: time.sleep(120) or []
        diagnose.install(report_dir="reports", timeout=1.0)
        raise ValueError("stuck collection")
    """
    started = time.monotonic()
    out = python(code, tmp_path)
    elapsed = time.monotonic() - started
    assert out.returncode == 1 and out.stderr.rstrip().endswith("ValueError: stuck collection")
    assert elapsed < 8  # interpreter start + 1 s bound, far from the 120 s the collector would take
    report = json.loads((tmp_path / "reports" / "rank-0.json").read_text())
    assert any("capture stopped at stage 'flight recorder'" in n for n in report["notes"])
    assert "log_line" in [e["kind"] for e in report["evidence"]]  # what was collected before the deadline


def test_own_failure_never_escapes(tmp_path):
    code = """
        import diagnose
        from diagnose.hook import collect
        def broken(*a, **k):
            raise RuntimeError("hook bug")
        collect.exception_evidence = broken
        collect.rank_info = broken
        diagnose.install(report_dir="reports")
        raise ValueError("the user's error")
    """
    out = python(code, tmp_path)
    plain = python(code.replace("diagnose.install(report_dir=\"reports\")", "pass"), tmp_path)
    assert out.returncode == plain.returncode == 1
    assert out.stderr == plain.stderr  # neither the hook's lines nor its error, just the user's traceback
    assert "hook bug" not in out.stderr


def test_thread_exception_chains_to_previous_hook(tmp_path):
    code = """
        import threading, diagnose
        diagnose.install(report_dir="reports")
        def work():
            raise KeyError("in a worker thread")
        t = threading.Thread(target=work, name="loader"); t.start(); t.join()
        print("main continues")
    """
    out = python(code, tmp_path)
    assert out.returncode == 0 and out.stdout == "main continues\n"
    assert "Exception in thread loader" in out.stderr and "KeyError: 'in a worker thread'" in out.stderr
    report = json.loads((tmp_path / "reports" / "rank-0.json").read_text())
    (line,) = [e for e in report["evidence"] if e.get("signature") == "hook_exception"]
    assert line["fields"]["thread"] == "loader" and line["fields"]["uncaught"] is False
    assert "rank_exit" not in [e["kind"] for e in report["evidence"]]  # the process did not die of it
