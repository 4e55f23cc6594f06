"""Real CPU torch runs for the scaling tests, generated once per session (marked torch)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

GEN = Path(__file__).parent / "gen"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*args: object) -> None:
    """Run a generator script; a failure carries the tail of its stderr into the test report."""
    done = subprocess.run([sys.executable, *map(str, args)], timeout=300,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        raise subprocess.CalledProcessError(done.returncode, done.args, stderr=done.stderr) from RuntimeError(tail)


@pytest.fixture(scope="session")
def slow_data_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DIR with train.log and trace.json of a run whose Dataset sleeps 4 ms per sample."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("slow-data")
    _run(GEN / "slow_data.py", out, 0.004)
    return out


@pytest.fixture(scope="session")
def chatty_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Chatty all-reduce runs: 'ws1' (one rank), 'ws2' (two gloo ranks), 'straggler' (rank 1 sleeps)."""
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("chatty")
    runs = {"ws1": (1, -1), "ws2": (2, -1), "straggler": (2, 1)}
    for name, (world, slow) in runs.items():
        for attempt in range(3):  # a free port can be taken by a concurrent job before the run binds it
            try:
                _run(GEN / "chatty_allreduce.py", root / name, world, _free_port(), slow)
                break
            except subprocess.CalledProcessError:
                if attempt == 2:
                    raise
    return {name: root / name for name in runs}
