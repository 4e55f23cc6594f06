"""Two checkpoints: wrapper prefixes explained, sharded vs full recognised, real differences listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.probes.checkpoint.compare import compare
from diagnose.probes.checkpoint.probe import inspect_checkpoint


def _tensors(path: Path) -> dict:
    return inspect_checkpoint(path).tensors


@pytest.mark.parametrize(("name", "wrapper"), [("ddp", "module."), ("compiled", "_orig_mod.")])
def test_wrapper_prefix_is_explained(ckpts: dict[str, Path], name: str, wrapper: str) -> None:
    diff = compare(_tensors(ckpts[name]), _tensors(ckpts["model_only"]))
    assert diff["match"] and not diff["raw_keys_match"]
    assert diff["explanation"] == [f"first has {'DDP/DataParallel' if wrapper == 'module.' else 'torch.compile'}"
                                   f" wrapper (`{wrapper}`)"]


def test_lightning_model_prefix(ckpts: dict[str, Path]) -> None:
    diff = compare(_tensors(ckpts["model_only"]), _tensors(ckpts["lightning"]))
    assert diff["match"] and diff["explanation"] == ["second has an extra `model.` prefix on every key"]


def test_sharded_against_full(ckpts: dict[str, Path]) -> None:
    """Halved weights are a shard only when the file says it is sharded; without that, a size change first."""
    diff = compare(_tensors(ckpts["tp_shard"]), _tensors(ckpts["model_only"]))
    assert not diff["match"] and diff["shape_count"] == 2
    assert diff["shape"][0] == {"key": "0.weight", "first": [8, 8], "second": [16, 8]}
    assert "different configuration" in diff["explanation"][0] and "shard" in diff["explanation"][0]
    known = compare(_tensors(ckpts["tp_shard"]), _tensors(ckpts["model_only"]), sharded=(True, False))
    assert known["explanation"] == ["2 tensor(s) differ by a whole factor in one dimension: "
                                    "first is sharded (per-rank), the other full"]


def test_other_hidden_size_is_a_configuration_change(tmp_path: Path) -> None:
    import torch

    small, big = tmp_path / "h512.pt", tmp_path / "h1024.pt"
    torch.save(torch.nn.Linear(16, 512).state_dict(), small)
    torch.save(torch.nn.Linear(16, 1024).state_dict(), big)
    diff = compare(_tensors(small), _tensors(big))
    assert diff["shape_count"] == 2 and "sharded" not in " ".join(diff["explanation"])
    assert "different configuration (hidden size" in diff["explanation"][0]


def test_different_model_keys(ckpts: dict[str, Path], tmp_path: Path) -> None:
    import torch

    other = tmp_path / "other.pt"
    torch.save({"0.weight": torch.zeros(16, 8), "head.weight": torch.zeros(4, 16)}, other)
    diff = compare(_tensors(ckpts["model_only"]), _tensors(other))
    assert diff["only_in_first"] == ["0.bias", "2.bias", "2.weight"] and diff["only_in_second"] == ["head.weight"]


def test_dcp_against_torch_save(ckpts: dict[str, Path], dcp_root: Path) -> None:
    diff = compare(_tensors(ckpts["model_only"]), _tensors(dcp_root / "step_1"))
    assert diff["match"] and diff["raw_keys_match"]
