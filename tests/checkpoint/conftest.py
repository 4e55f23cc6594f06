"""Real checkpoints written once per session by real torch (CPU), in every layout we read."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("numpy")

import ckpt_writers as W  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ckpts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> path of each single-process checkpoint."""
    out = tmp_path_factory.mktemp("ckpts")
    paths = W.write_torch_files(out)
    paths["lightning"] = W.write_lightning(out)
    paths["lightning_weights"] = W.write_lightning(out, complete=False)
    paths["trainer"] = W.write_trainer(out / "full" / "checkpoint-500")
    paths["trainer_no_optim"] = W.write_trainer(out / "part" / "checkpoint-500",
                                                drop=("optimizer.pt", "scheduler.pt", "scaler.pt"))
    paths["accelerate"] = W.write_accelerate(out / "accelerate")
    paths["deepspeed"] = W.write_deepspeed(out / "ds")
    paths["deepspeed_lost_shard"] = W.write_deepspeed(out / "ds_lost", dp=4, drop_rank=3)
    return paths


@pytest.fixture(scope="session")
def dcp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of two DCP step folders (step_1, step_2) written by 2 real gloo ranks."""
    from ckpt_dcp_writer import write

    out = tmp_path_factory.mktemp("dcp")
    write(str(out), world=2, port=_free_port(), steps=2)
    return out


@pytest.fixture()
def dcp_copy(dcp_root: Path, tmp_path: Path) -> Path:
    """A private copy of the DCP step folders, free to damage."""
    dst = tmp_path / "run"
    shutil.copytree(dcp_root, dst)
    return dst


@pytest.fixture(scope="session")
def sharded_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Per-rank DTensor, FSDP2 and ShardedTensor files and an FSDP2 DCP folder, from 2 real gloo ranks."""
    from ckpt_sharded_writer import write
    from torch.multiprocessing.spawn import ProcessExitedException

    for attempt in range(3):  # gloo in torch 2.13 sometimes aborts a rank at exit (SIGABRT): a retry, not a fix
        out = tmp_path_factory.mktemp("sharded")
        try:
            write(str(out), world=2, port=_free_port())
            return out
        except ProcessExitedException:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
