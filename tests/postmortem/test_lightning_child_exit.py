"""Lightning's child-process observer line is a rank exit: -9 reads as SIGKILL (host OOM killer), like torchrun's.

The text comes from Lightning-AI/pytorch-lightning:src/lightning/fabric/strategies/launchers/subprocess_script.py
(2.1+), prefixed by rank_prefixed_message as "[rank: N] ".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _diagnose(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(path), "--json"],
                         capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def test_child_killed_by_sigkill_is_host_memory(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Epoch 3:  41%|####      | 512/1250 [10:02<14:28,  0.85it/s, loss=0.31]\n"
                   "[rank: 1] Child process with PID 77120 terminated with code -9. Forcefully terminating all"
                   " other processes to avoid zombies \U0001f9df\n", encoding="utf-8")
    report = _diagnose(log)
    assert report["causes"][0]["id"] == "host_memory"
    assert report["causes"][0]["ranks"] == [1]


def test_child_exit_code_one_is_not_an_oom(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("[rank: 1] Child process with PID 77120 terminated with code 1. Forcefully terminating all"
                   " other processes to avoid zombies \U0001f9df\n", encoding="utf-8")
    report = _diagnose(log)
    assert all(c["id"] != "host_memory" for c in report["causes"])
