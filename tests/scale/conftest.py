"""Fixtures for the many-ranks test: the 4,096-rank logs are generated once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scale_gen import generate  # noqa: E402


@pytest.fixture(scope="session", params=["flat", "logdir"])
def many_rank_logs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DIR with 4,096 rank logs: rank 1234 died of a CUDA OOM, every other rank hit the NCCL watchdog."""
    return generate(tmp_path_factory.mktemp(f"ranks4096-{request.param}"), request.param)
