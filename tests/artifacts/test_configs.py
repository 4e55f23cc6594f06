"""Configs parsed into ConfigSetting fields; hostile YAML and JSON refused with a note."""

from __future__ import annotations

import json

import pytest
from artifact_helpers import parsed

from diagnose.probes.artifacts import parse


@pytest.mark.parametrize(("rel", "fmt", "want"), [
    ("docs/ds_zero3.json", "deepspeed", {"local_batch": 4, "accumulation": 8, "precision": "bf16", "zero_stage": 3,
                                         "offload_optimizer": "cpu", "offload_param": "cpu", "lr": 2e-5,
                                         "warmup": 100.0, "log_every": 10}),
    ("docs/ds_zero2.json", "deepspeed", {"zero_stage": 2, "offload_optimizer": "cpu", "reduce_bucket_size": 5e8,
                                         "allgather_bucket_size": 5e8, "overlap_comm": True, "zero_bucket_gb": 9.0}),
    ("docs/accelerate_fsdp.yaml", "accelerate", {"distributed_type": "FSDP", "num_processes": 8, "num_machines": 1,
                                                 "precision": "bf16", "fsdp_state_dict_type": "FULL_STATE_DICT",
                                                 "fsdp_wrap": "TRANSFORMER_BASED_WRAP", "offload_param": "none"}),
    ("docs/lightning_cli.yaml", "lightning", {"num_processes": 4, "num_machines": 2, "distributed_type": "ddp",
                                              "precision": "16-mixed", "accumulation": 2, "sync_batchnorm": False,
                                              "log_every": 50, "local_batch": 32, "num_workers": 8, "lr": 0.001}),
    ("docs/hydra_config.yaml", "lightning", {"num_processes": 8, "local_batch": 64, "num_workers": 4, "lr": 0.1,
                                             "sync_batchnorm": False}),
    ("docs/torchtune_recipe.yaml", "torchtune", {"local_batch": 2, "accumulation": 1, "precision": "bf16",
                                                 "lr": 2e-5, "warmup": 100.0, "log_every": 1, "offload_param": "none"}),
    ("docs/opennmt_two_nodes.yaml", "opennmt", {"world_size": 4, "num_processes": 2, "master_addr": "10.1.0.5",
                                                "local_batch": 4096, "lr": 2.0, "warmup": 8000.0}),
    ("docs/hf_training_args.txt", "hf_training_args", {"local_batch": 8, "accumulation": 4, "lr": 5e-5,
                                                       "precision": "fp16", "num_workers": 0, "log_every": 500}),
])
def test_config_fixtures(rel: str, fmt: str, want: dict) -> None:
    (cfg,) = parsed(rel, "config_setting")
    assert cfg.format == fmt
    for key, value in want.items():
        assert getattr(cfg, key) == (pytest.approx(value) if isinstance(value, float) else value), key


def test_config_block_inside_a_mixed_paste() -> None:
    text = ("I launch with accelerate and this config:\n\ncompute_environment: LOCAL_MACHINE\n"
            "distributed_type: MULTI_GPU\nnum_processes: 4\nmixed_precision: fp16\n\nand then it hangs:\n"
            "Traceback (most recent call last):\n")
    (cfg,) = [e for e in parse("issue.md", text)[0] if e.kind == "config_setting"]
    assert (cfg.format, cfg.num_processes, cfg.precision, cfg.provenance.line) == ("accelerate", 4, "fp16", 3)


@pytest.mark.parametrize(("line", "world", "ranks", "addr"), [
    # OpenNMT-py's FAQ (docs/source/FAQ.md): four GPUs of one node, and the first of two nodes
    ("onmt_train -config run.yaml -world_size 4 -gpu_ranks 0 1 2 3", 4, (0, 1, 2, 3), None),
    ("onmt_train -config run.yaml -world_size 4 -gpu_ranks 0 1 -master_ip 10.1.0.5 -master_port 10000", 4, (0, 1),
     "10.1.0.5"),
    ("python train.py -mode train -visible_gpus 0,1,2 -gpu_ranks 0,1,2 -batch_size 3000", None, (0, 1, 2), None),
])
def test_opennmt_rank_flags_on_a_command_line(line: str, world: int | None, ranks: tuple, addr: str | None) -> None:
    (cfg,) = [e for e in parse("run.sh", line + "\n")[0] if e.kind == "config_setting"]
    assert (cfg.format, cfg.world_size, cfg.node_ranks, cfg.num_processes, cfg.master_addr) == (
        "opennmt_flags", world, ranks, len(ranks), addr)


def test_two_config_lines_inside_a_code_fence() -> None:
    text = "I cannot start training on 3 of my 4 GPUs with:\n\n```\nworld_size: 4\ngpu_ranks: [1, 2, 3]\n```\n"
    (cfg,) = [e for e in parse("issue.md", text)[0] if e.kind == "config_setting"]
    assert (cfg.format, cfg.world_size, cfg.node_ranks, cfg.provenance.line) == ("opennmt", 4, (1, 2, 3), 4)


def test_two_colon_lines_outside_a_fence_are_not_a_config() -> None:
    text = "I cannot start training on 3 of my 4 GPUs with\nworld_size: 4\ngpu_ranks: [1, 2, 3]\nany idea?\n"
    assert not [e for e in parse("issue.md", text)[0] if e.kind == "config_setting"]


def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\ndistributed_type: MULTI_GPU\ncompute_environment: LOCAL_MACHINE\n"


def test_yaml_alias_bomb_is_refused_quickly() -> None:
    found, notes = parse("bomb.yaml", _laughs(9))
    assert not [e for e in found if e.kind == "config_setting"]
    assert any("aliases" in n for n in notes)


def test_deep_json_is_refused() -> None:
    text = '{"zero_optimization": ' + "[" * 100_000 + "]" * 100_000 + "}"
    found, notes = parse("deep.json", text)
    assert not [e for e in found if e.kind == "config_setting"]
    assert notes


def test_deep_yaml_is_refused() -> None:
    text = "distributed_type: x\ncompute_environment: y\nk: " + "[" * 5000 + "]" * 5000 + "\n"
    found, notes = parse("deep.yaml", text)
    assert any("deeper" in n for n in notes)


def test_oversized_config_is_not_read() -> None:
    big = {"zero_optimization": {"stage": 2}, "pad": "x" * (2 << 20)}
    found, _ = parse("big.json", json.dumps(big))
    assert not [e for e in found if e.kind == "config_setting"]


def test_yaml_tags_do_not_execute() -> None:
    text = "distributed_type: !!python/object/apply:os.system ['echo pwned']\ncompute_environment: LOCAL_MACHINE\n"
    found, _ = parse("evil.yaml", text)
    assert not [e for e in found if e.kind == "config_setting" and e.distributed_type]
