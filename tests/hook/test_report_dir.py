"""A report directory that refuses the report (full, not writable): one `[diagnose]` line says so, the exception is untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys, diagnose
    diagnose.install(report_dir=sys.argv[1], use_engine=False)
    raise ValueError("bad batch on purpose")
""")


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("[diagnose]")]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to run "
                    "as an unprivileged user")
def test_read_only_report_dir(tmp_path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir(mode=0o755)  # root's: not writable for the unprivileged user
    tmp_path.chmod(0o755)
    out = subprocess.run(["setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups", sys.executable,
                          "-c", SCRIPT, str(reports)], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 1 and out.stderr.rstrip().endswith("ValueError: bad batch on purpose")
    lines = _lines(out.stderr)
    assert len(lines) == 1 and "report not written" in lines[0] and "Permission denied" in lines[0], lines
    assert "bound" not in lines[0]
    assert not list(reports.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_full_report_dir(tmp_path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(full)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (full / "filler").write_bytes(b"\0" * 8192)
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(full)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and out.stderr.rstrip().endswith("ValueError: bad batch on purpose")
        lines = _lines(out.stderr)
        assert len(lines) == 1 and "No space left on device" in lines[0], lines
    finally:
        subprocess.run(["umount", str(full)], check=False)
