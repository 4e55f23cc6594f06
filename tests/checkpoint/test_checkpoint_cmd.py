"""`run_checkpoint`: the report and its diagnosis, end to end on real checkpoints."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from diagnose.commands.checkpoint import run_checkpoint
from diagnose.errors import ConfigError


def _ids(report) -> list[str]:  # noqa: ANN001
    return [c.id for c in report.causes]


def test_model_only_lacks_training_state(ckpts: dict[str, Path]) -> None:
    report = run_checkpoint([ckpts["model_only"]])
    data = json.loads(json.dumps(report.to_json_dict()))
    assert data["command"] == "checkpoint"
    ck = data["checkpoint"]
    assert ck["format"] == "torch.save" and ck["present"] == ["model"]
    assert ck["missing"] == ["optimizer", "scheduler", "scaler", "rng", "sampler", "step"]
    assert ck["world_size"] is None and ck["keys"]["model"][0] == "0.weight"
    top = report.causes[0]
    assert top.id == "checkpoint_missing_state" and top.confidence == "high"
    assert "has no optimizer, scheduler, scaler, rng, sampler, step state" in top.summary
    assert top.evidence[0].source == str(ckpts["model_only"])


def test_complete_checkpoint_is_quiet(ckpts: dict[str, Path]) -> None:
    report = run_checkpoint([ckpts["complete"]])
    assert report.causes == [] and report.checkpoint["missing"] == []


def test_suspicious_pickle_is_reported_not_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x8c\x06system\x93"
                     + b"\x8c" + bytes([len(f"touch {marker}")]) + f"touch {marker}".encode() + b"\x85R.")
    report = run_checkpoint([evil])
    assert not marker.exists()
    assert report.checkpoint["suspicious_globals"] == ["posix.system"]
    assert any("posix.system" in n and "not loaded" in n for n in report.notes)


def test_two_checkpoints_with_a_ddp_prefix(ckpts: dict[str, Path]) -> None:
    report = run_checkpoint([ckpts["ddp"], ckpts["model_only"]])
    mm = report.checkpoint["mismatches"]
    assert mm["explanation"] == ["first has DDP/DataParallel wrapper (`module.`)"]
    cause = next(c for c in report.causes if c.id == "state_dict_mismatch")
    assert cause.confidence == "medium" and "module." in cause.summary


def test_sharded_against_full_is_a_mismatch(ckpts: dict[str, Path]) -> None:
    report = run_checkpoint([ckpts["model_only"], ckpts["tp_shard"]])
    cause = next(c for c in report.causes if c.id == "state_dict_mismatch")
    # tp_shard is a plain torch.save of halved weights (no shard metadata): a size change or a rank's shard.
    assert cause.confidence == "high" and "different configuration" in cause.summary and "shard" in cause.summary


def test_lost_zero_shard(ckpts: dict[str, Path]) -> None:
    report = run_checkpoint([ckpts["deepspeed_lost_shard"]])
    assert report.causes[0].id == "sharding_misconfig"
    assert report.checkpoint["world_size"] == 4 and report.checkpoint["issues"] == ["missing_shard"]


@pytest.mark.torch
def test_torn_dcp_step(dcp_copy: Path) -> None:
    (dcp_copy / "step_2" / ".metadata").unlink()
    os.truncate(dcp_copy / "step_2" / "__0_0.distcp", 10)
    report = run_checkpoint([dcp_copy])
    ids = _ids(report)
    assert ids[0] == "checkpoint_missing_state" and "sharding_misconfig" in ids
    assert "torn latest step: step_2; last complete: step_1" in report.causes[0].summary


def test_bad_usage() -> None:
    with pytest.raises(ConfigError):
        run_checkpoint([Path("/nonexistent/ckpt.pt")])
    with pytest.raises(ConfigError):
        run_checkpoint([])


def test_comparison_blames_the_file_that_lacks_the_state(tmp_path: Path) -> None:
    """A has the optimizer, B does not: the cause names B and its own missing states, in either order."""
    import torch

    from diagnose.commands.checkpoint import run_checkpoint

    model = torch.nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    with_opt, without = tmp_path / "with_opt.pt", tmp_path / "without.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 3}, with_opt)
    torch.save({"model": model.state_dict(), "step": 3}, without)
    for pair in ((with_opt, without), (without, with_opt)):
        cause = run_checkpoint(list(pair)).causes[0]
        assert cause.id == "checkpoint_missing_state"
        assert cause.summary.startswith(f"{without} (torch.save) has no optimizer,"), cause.summary
        assert str(with_opt) not in cause.summary
