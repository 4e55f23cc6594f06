"""The figures of a CUDA out-of-memory message decide who holds the device: this process, or another one."""

from __future__ import annotations

from pathlib import Path

from diagnose.commands.logs import run_logs


def test_oom_figures_show_memory_held_by_another_process(tmp_path: Path) -> None:
    """torch 1.x's OOM figures (the fragment from "Tried to allocate", as pasted in facebookresearch/fastMRI#238):
    7.92 GiB total, 24.56 MiB free, 86 MiB reserved by this process: the rest is another process's."""
    (tmp_path / "stderr.txt").write_text(
        "Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB already allocated; 24.56 MiB free; "
        "86.00 MiB reserved in total by PyTorch)\n")
    report = run_logs([tmp_path])
    top = report.causes[0]
    assert report.symptom == "oom" and top.id == "stale_processes"
    assert "7.81 GiB is held by another process" in top.summary and top.evidence[0].line == 1


def test_oom_filled_by_this_process_is_not_blamed_on_others(tmp_path: Path) -> None:
    (tmp_path / "stderr.txt").write_text(
        "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 7.79 GiB total capacity; 6.29 GiB "
        "already allocated; 37.31 MiB free; 6.42 GiB reserved in total by PyTorch)\n")
    report = run_logs([tmp_path])
    assert report.symptom == "oom" and report.causes[0].id != "stale_processes"
    assert "stale_processes" not in [c.id for c in report.causes]
