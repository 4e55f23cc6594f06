"""Special files and permissions: never block on a FIFO, refuse what cannot be read, as an ordinary user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

NOBODY = 65534


def _diagnose(*args: str, user: int | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "diagnose", "checkpoint", *args]
    if user is not None:
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            pytest.skip("needs root and setpriv to run the check as an unprivileged user")
        cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/")


def test_a_fifo_named_on_the_command_line_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "model.pt"
    os.mkfifo(fifo)
    out = _diagnose(str(fifo))
    assert out.returncode == 2 and "FIFO" in out.stderr


def test_a_dcp_folder_whose_metadata_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    folder = tmp_path / "step_10"
    folder.mkdir()
    os.mkfifo(folder / ".metadata")
    (folder / "__0_0.distcp").write_bytes(b"\0" * 64)
    out = _diagnose(str(folder), "--json")
    assert out.returncode == 0, out.stderr
    assert "not a regular file" in out.stdout


@pytest.fixture
def open_dir() -> Path:
    """A folder an ordinary user can enter (pytest's tmp_path sits under a root-only folder)."""
    path = Path(tempfile.mkdtemp(prefix="diagnose-perm-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_unreadable_checkpoint_is_a_usage_error_for_an_ordinary_user(open_dir: Path) -> None:
    path = open_dir / "secret.pt"
    torch.save({"w": torch.ones(1)}, path)
    os.chmod(path, 0o600)
    out = _diagnose(str(path), user=NOBODY)
    assert out.returncode == 2 and "permission denied" in out.stderr


def test_a_folder_the_user_cannot_enter_is_a_usage_error(open_dir: Path) -> None:
    folder = open_dir / "ckpt"
    folder.mkdir(mode=0o700)
    torch.save({"w": torch.ones(1)}, folder / "model.pt")
    out = _diagnose(str(folder), user=NOBODY)
    assert out.returncode == 2 and "permission denied" in out.stderr
