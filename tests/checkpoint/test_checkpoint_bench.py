"""Inspecting a ~100 MB torch.save checkpoint vs just reading its bytes (the baseline)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diagnose.probes.checkpoint.probe import inspect_checkpoint

CHUNK = 8 << 20


@pytest.fixture(scope="module")
def big_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~100 MB: a 32-layer MLP state dict with Adam state (many keys, real tensors)."""
    import torch

    model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(32)])
    optim = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 512)).sum().backward()
    optim.step()
    path = tmp_path_factory.mktemp("big") / "big.pt"
    torch.save({"model": model.state_dict(), "optimizer": optim.state_dict(), "step": 1}, path)
    return path


def _read_all(path: Path, cold: bool = False) -> int:
    total = 0
    if cold:  # evict this file's pages from the page cache first (only this file)
        with open(path, "rb") as fh:
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(CHUNK):
            total += len(chunk)
    return total


@pytest.mark.benchmark(group="checkpoint-100MB")
def test_bench_read_baseline(benchmark, big_checkpoint: Path) -> None:  # noqa: ANN001
    assert benchmark(_read_all, big_checkpoint) > 90_000_000


@pytest.mark.benchmark(group="checkpoint-100MB")
def test_bench_read_baseline_cold(benchmark, big_checkpoint: Path) -> None:  # noqa: ANN001
    assert benchmark(_read_all, big_checkpoint, True) > 90_000_000


@pytest.mark.benchmark(group="checkpoint-100MB")
def test_bench_inspect(benchmark, big_checkpoint: Path) -> None:  # noqa: ANN001
    info = benchmark(inspect_checkpoint, big_checkpoint)
    assert info.present == ["model", "optimizer", "step"] and len(info.tensors) == 64
