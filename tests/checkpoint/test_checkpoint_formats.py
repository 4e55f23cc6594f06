"""Every format we read, complete and with parts missing: every missing state is reported, nothing present is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from diagnose.probes.checkpoint.probe import inspect_checkpoint

ALL = ["model", "optimizer", "scheduler", "scaler", "rng", "sampler", "step"]


def _states(path: Path) -> tuple[str, list[str], list[str]]:
    info = inspect_checkpoint(path)
    assert set(info.present).isdisjoint(info.missing)
    return info.format, info.present, info.missing


@pytest.mark.parametrize(("name", "fmt", "missing"), [
    ("model_only", "torch.save", ["optimizer", "scheduler", "scaler", "rng", "sampler", "step"]),
    ("complete", "torch.save", []),
    ("no_optimizer", "torch.save", ["optimizer", "scheduler", "scaler"]),
    ("legacy", "torch.save-legacy", ["scheduler", "scaler", "sampler"]),
    ("lightning", "lightning", ["rng", "sampler"]),
    ("lightning_weights", "lightning", ["optimizer", "scheduler", "scaler", "rng", "sampler"]),
    ("trainer", "hf-trainer", []),
    ("trainer_no_optim", "hf-trainer", ["optimizer", "scheduler", "scaler"]),
    ("accelerate", "accelerate", ["sampler", "step"]),
    ("deepspeed", "deepspeed", ["rng", "sampler"]),
])
def test_states_present_and_missing(ckpts: dict[str, Path], name: str, fmt: str, missing: list[str]) -> None:
    got_fmt, present, got_missing = _states(ckpts[name])
    assert got_fmt == fmt
    assert got_missing == missing
    assert set(present) >= set(ALL) - set(missing)


def test_complete_file_is_real_and_refused_by_weights_only(ckpts: dict[str, Path]) -> None:
    """The numpy RNG state makes torch's safe loader refuse the file; we still read it, keys and all."""
    with pytest.raises(Exception, match="numpy"):
        torch.load(ckpts["complete"], weights_only=True)
    info = inspect_checkpoint(ckpts["complete"])
    assert info.suspicious_globals == []
    assert "numpy_rng" in info.keys["rng"] and "torch_rng" in info.keys["rng"]
    assert info.keys["optimizer"][0].startswith("optimizer.state")
    assert info.tensors["0.weight"].shape == (16, 8) and info.tensors["0.weight"].dtype == "float32"


def test_inspection_imports_neither_torch_nor_numpy(ckpts: dict[str, Path]) -> None:
    code = ("import sys; from diagnose.probes.checkpoint.probe import inspect_checkpoint as i; "
            f"info = i({str(ckpts['complete'])!r}); assert info.present, info; "
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_keys_show_each_state(ckpts: dict[str, Path]) -> None:
    info = inspect_checkpoint(ckpts["lightning"])
    assert info.keys["optimizer"] == ["optimizer_states"]
    assert info.keys["scheduler"] == ["lr_schedulers"]
    assert info.keys["scaler"][0].startswith("MixedPrecision.")
    assert set(info.keys["step"]) == {"epoch", "global_step"}
    trainer = inspect_checkpoint(ckpts["trainer"])
    assert trainer.keys["step"] == ["trainer_state.json:global_step=500"]
    assert trainer.keys["rng"] == ["rng_state_0.pth", "rng_state_1.pth"]


def test_world_size_from_per_rank_files(ckpts: dict[str, Path]) -> None:
    assert inspect_checkpoint(ckpts["trainer"]).world_size == 2
    assert inspect_checkpoint(ckpts["accelerate"]).world_size == 2
    assert inspect_checkpoint(ckpts["deepspeed"]).world_size == 2


def test_deepspeed_missing_zero_shard(ckpts: dict[str, Path]) -> None:
    info = inspect_checkpoint(ckpts["deepspeed_lost_shard"])
    assert info.world_size == 4
    assert info.issues == ["missing_shard"]
    assert "DP rank(s) [3] missing: 3 of 4 present" in info.problems[0]


def test_truncated_torch_save(ckpts: dict[str, Path], tmp_path: Path) -> None:
    """A save cut short (no zip directory) is reported, not crashed on."""
    data = ckpts["complete"].read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    info = inspect_checkpoint(cut)
    assert info.issues == ["truncated"] and info.present == []
    assert "interrupted" in (info.error or "")


@pytest.mark.torch
def test_dcp_two_ranks(dcp_root: Path) -> None:
    info = inspect_checkpoint(dcp_root / "step_2")
    assert info.format == "dcp" and info.world_size == 2 and info.issues == []
    assert info.present == ["model", "optimizer", "scheduler", "step", "sharding"]
    assert info.missing == ["scaler", "rng", "sampler"]
    assert info.tensors["0.weight"].shape == (16, 8)


@pytest.mark.torch
def test_dcp_torn_latest_step(dcp_copy: Path) -> None:
    """The coordinator writes .metadata last: a save killed before it leaves shards without metadata."""
    (dcp_copy / "step_2" / ".metadata").unlink()
    info = inspect_checkpoint(dcp_copy)
    assert info.issues[0] == "torn_step"
    assert info.problems[0] == "torn latest step: step_2; last complete: step_1"
    assert "missing_shard" in info.issues


@pytest.mark.torch
def test_dcp_missing_and_short_shards(dcp_copy: Path) -> None:
    step = dcp_copy / "step_1"
    (step / "__1_0.distcp").unlink()
    os.truncate(step / "__0_0.distcp", 100)
    info = inspect_checkpoint(step)
    assert set(info.issues) == {"missing_shard", "truncated"}
    assert any("__1_0.distcp referenced by .metadata is missing" in p for p in info.problems)


@pytest.mark.torch
def test_dcp_stray_shards_of_another_world_size(dcp_copy: Path) -> None:
    step = dcp_copy / "step_1"
    for rank in (2, 3):
        (step / f"__{rank}_0.distcp").write_bytes(b"\0" * 64)
    info = inspect_checkpoint(step)
    assert info.issues == ["stray_shard"] and "world size 4" in info.problems[0]


@pytest.mark.torch
def test_ten_gigabyte_folder_reads_in_milliseconds(dcp_copy: Path) -> None:
    """Sparse 5 GB shards: only metadata is read, so size does not matter."""
    step = dcp_copy / "step_2"
    for shard in step.glob("*.distcp"):
        os.truncate(shard, 5 << 30)
    start = time.perf_counter()
    info = inspect_checkpoint(dcp_copy)
    elapsed = time.perf_counter() - start
    assert info.issues == [] and info.world_size == 2
    assert elapsed < 2.0, elapsed


def test_sparse_ten_gigabyte_safetensors(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({"w": torch.zeros(4, 4)}, path)
    os.truncate(path, 10 << 30)
    start = time.perf_counter()
    info = inspect_checkpoint(path)
    assert time.perf_counter() - start < 1.0
    assert info.format == "safetensors" and info.tensors["w"].shape == (4, 4)
    assert info.present == ["model"]
