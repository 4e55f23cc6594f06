"""Real sharded state dicts (DTensor, FSDP2, ShardedTensor, DCP) are sharded, not suspicious."""

from __future__ import annotations

import collections.abc
from pathlib import Path

import pytest
import torch

from diagnose.commands.checkpoint import run_checkpoint
from diagnose.probes.checkpoint.probe import inspect_checkpoint

SEQ = ("import torch\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(8, 16), "
       "torch.nn.ReLU(), torch.nn.Linear(16, 4))\n")


@pytest.mark.parametrize("name", ["dtensor_rank0.pt", "dtensor_rank1.pt", "fsdp2_rank0.pt",
                                  "sharded_tensor_rank0.pt", "sharded_tensor_rank1.pt"])
def test_per_rank_sharded_files_are_not_suspicious(sharded_dir: Path, name: str) -> None:
    info = inspect_checkpoint(sharded_dir / name)
    assert info.suspicious_globals == [] and info.dangerous_globals == []
    assert info.sharded and "model" in info.present
    assert any("sharded state dict" in n and "per-rank" in n for n in info.notes)


def test_sharded_tensor_file_uses_getattr_harmlessly(sharded_dir: Path) -> None:
    from diagnose.probes.checkpoint.files import read_file

    content = read_file(sharded_dir / "sharded_tensor_rank0.pt")
    assert "builtins.getattr" in content.globals and content.suspicious == ()


def test_fsdp2_dcp_folder(sharded_dir: Path) -> None:
    info = inspect_checkpoint(sharded_dir / "fsdp2_dcp")
    assert info.format == "dcp" and info.world_size == 2 and info.suspicious_globals == []
    assert info.tensors["0.weight"].shape == (16, 8) and info.tensors["0.weight"].dtype == "float32"


@pytest.mark.parametrize("name", ["fsdp2_rank0.pt", "fsdp2_dcp"])
def test_sharded_against_model(sharded_dir: Path, tmp_path: Path, name: str) -> None:
    (tmp_path / "seq.py").write_text(SEQ)
    report = run_checkpoint([sharded_dir / name], model=f"{tmp_path / 'seq.py'}:build")
    mm = report.checkpoint["mismatches"]
    assert mm["match"] and not mm["only_in_first"] and not mm["only_in_second"]
    assert report.checkpoint["suspicious_globals"] == []


class _Reduce:
    def __init__(self, func: object, args: tuple[object, ...]) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.func, self.args


@pytest.mark.parametrize(("payload", "harmless"), [
    ({"member": _Reduce(getattr, (torch.Size, "Inner"))}, True),
    ({"a": _Reduce(getattr, (torch.Size, "Inner")), "b": _Reduce(getattr, (torch.Size, "Other"))}, True),
    ({"dunder": _Reduce(getattr, (torch.Size, "__init__"))}, False),
    ({"method": _Reduce(getattr, (torch.Size, "numel"))}, False),
    ({"value": [getattr]}, False),
    ({"ok": _Reduce(getattr, (torch.Size, "Inner")), "value": [getattr]}, False),
    ({"owner": _Reduce(getattr, (collections.abc.Mapping, "Inner"))}, False),
])
def test_getattr_audit(tmp_path: Path, payload: dict, harmless: bool) -> None:
    for proto in (2, 4):
        path = tmp_path / f"p{proto}.pt"
        torch.save(payload, path, pickle_protocol=proto)
        info = inspect_checkpoint(path)
        assert ("builtins.getattr" not in info.dangerous_globals) is harmless, (proto, info)
