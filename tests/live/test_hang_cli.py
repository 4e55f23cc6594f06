"""`diagnose hang` on the command line: bad job ids and --save targets refused before probing, permissions, --redact."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

DIAGNOSE = [sys.executable, "-m", "diagnose"]


def _hang(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DIAGNOSE, "hang", *args], capture_output=True, text=True, timeout=60, check=False, **kw)


def test_job_id_beyond_any_pid_is_a_usage_error() -> None:
    out = _hang("--job", "99999999999999999999")
    assert out.returncode == 2, out.stderr
    assert "is no process id (the largest is" in out.stderr and "OverflowError" not in out.stderr


def test_save_onto_a_file_fails_before_probing(tmp_path) -> None:
    target = tmp_path / "taken"
    target.write_text("keep me")
    t0 = time.monotonic()
    out = _hang("--job", "no-such-job-anywhere", "--save", str(target))
    assert out.returncode == 2
    assert "--save" in out.stderr and "a file of that name exists" in out.stderr  # not the job error: checked first
    assert target.read_text() == "keep me" and time.monotonic() - t0 < 20


def test_save_into_a_folder_with_earlier_files_is_refused(tmp_path) -> None:
    (tmp_path / "evidence.jsonl").write_text('{"kind": "stale"}\n')
    out = _hang("--job", "no-such-job-anywhere", "--save", str(tmp_path))
    assert out.returncode == 2 and "not empty" in out.stderr
    assert (tmp_path / "evidence.jsonl").read_text() == '{"kind": "stale"}\n'


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to "
                    "run as an unprivileged user")
@pytest.mark.parametrize("form", ["pid:", ""])
def test_another_users_job_says_permissions_are_the_reason(tmp_path, form) -> None:
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            env={**os.environ, "RANK": "0", "WORLD_SIZE": "1"})
    try:
        cmd = ["setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups", *DIAGNOSE, "hang",
               "--job", f"{form}{rank.pid}"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
                             env={**os.environ, "HOME": str(tmp_path)})
        assert out.returncode == 2, out.stderr
        assert f"permission denied: process {rank.pid} belongs to uid 0" in out.stderr, out.stderr
        assert rank.poll() is None
    finally:
        rank.kill()
        rank.wait()


@pytest.mark.torch
@pytest.mark.parametrize("launcher", ["plain", "torchrun"])
def test_redacted_json_keeps_ranks_and_hides_pids_and_job_id(hung_job, launcher) -> None:
    job = hung_job("skip_allreduce", nproc=2, launcher=launcher)
    ident = str(job.pid) if launcher == "plain" else job.run_id()
    out = _hang("--job", ident, "--json", "--redact")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["causes"][0]["id"], report["causes"][0]["ranks"]) == ("collective_mismatch", [1])
    text = out.stdout
    for pid in [ident, job.pid, *job.rank_pids.values()]:
        assert str(pid) not in text, pid
    line = next(n for n in report["notes"] if n.startswith("found 2 rank processes"))
    assert "rank 0 pid <pid-" in line and "rank 1 pid <pid-" in line, line
