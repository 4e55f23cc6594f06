"""What a pasted training script shows (issue 11: read everything a user pastes): CodeFact evidence at its line,
the cause it leads to when the user says what they saw, and the near misses that stay quiet.

Fixtures under fixtures/code_facts/ (sources in SOURCES.md) are written here after the facts of the PyTorch,
Accelerate and Lightning documentation; the near misses are the documented right ways (the DDP tutorial's
save-barrier-load, the "main process first" barrier pair, set_epoch, SyncBatchNorm, no_sync)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from artifact_helpers import FIXTURES, parsed

from diagnose.commands.logs import run_logs

CODE = "code_facts"


@pytest.mark.parametrize(
    ("fixture", "fact", "line", "guard"),
    [
        ("rank0_eval_all_reduce.py", "collective_under_rank_guard", 19, "dist.get_rank() == 0"),
        ("accelerate_gather_on_main.py", "collective_under_rank_guard", 18, "accelerator.is_main_process"),
        ("rank0_ddp_forward.py", "ddp_forward_under_rank_guard", 20, "rank == 0"),
        ("resume_without_map_location.py", "load_without_map_location", 15, None),
        ("sampler_without_set_epoch.py", "sampler_without_set_epoch", 10, None),
        ("batchnorm_without_sync.py", "batchnorm_without_sync", 10, None),
        ("cuda_without_device_binding.py", "cuda_without_device_binding", 7, None),
        ("nccl_barrier_without_device_binding.py", "nccl_group_without_device_binding", 7, None),
        ("accumulation_without_no_sync.py", "accumulation_without_no_sync", 11, None),
        ("loader_without_workers.py", "loader_without_workers", 10, None),
        ("sharded_generate_without_synced_gpus.py", "sharded_generate_without_synced_gpus", 9, None),
    ],
)
def test_fact_at_its_line(fixture: str, fact: str, line: int, guard: str | None) -> None:
    (found,) = parsed(f"{CODE}/{fixture}", "code_fact")
    assert (found.fact, found.provenance.line, found.guard) == (fact, line, guard)


@pytest.mark.parametrize(
    ("fixture", "symptom", "cause", "rule"),
    [
        ("rank0_eval_all_reduce.py", "hang_mid_run", "collective_mismatch", "code-collective-under-rank-guard"),
        ("accelerate_gather_on_main.py", "hang_mid_run", "collective_mismatch", "code-collective-under-rank-guard"),
        ("rank0_ddp_forward.py", "hang_mid_run", "collective_mismatch", "code-ddp-forward-under-rank-guard"),
        ("resume_without_map_location.py", "oom", "rank_env_mismatch", "code-load-without-map-location"),
        ("sampler_without_set_epoch.py", "divergence", "sampler_misconfig", "code-sampler-without-set-epoch"),
        ("batchnorm_without_sync.py", "divergence", "batchnorm_sync", "code-batchnorm-without-sync"),
        ("cuda_without_device_binding.py", "oom", "rank_env_mismatch", "code-cuda-without-device-binding"),
        ("nccl_barrier_without_device_binding.py", "oom", "rank_env_mismatch", "code-cuda-without-device-binding"),
        ("accumulation_without_no_sync.py", "slow_scaling", "communication_bound",
         "code-accumulation-without-no-sync"),
        ("loader_without_workers.py", "slow_step", "input_pipeline_bound", "code-loader-without-workers"),
        ("sharded_generate_without_synced_gpus.py", "hang_mid_run", "collective_mismatch",
         "code-generates-sharded-without-synced-gpus"),
    ],
)
def test_told_symptom_names_the_cause(fixture: str, symptom: str, cause: str, rule: str) -> None:
    report = run_logs([FIXTURES / CODE / fixture], symptom=symptom)
    top = report.causes[0]
    assert top.id == cause and rule in top.rules, [(c.id, c.rules) for c in report.causes[:3]]
    assert any(e.line and e.source.endswith(fixture) for e in top.evidence)


def test_collective_under_a_rank_guard_names_the_hang_unasked() -> None:
    report = run_logs([FIXTURES / CODE / "rank0_eval_all_reduce.py"])
    assert report.symptom == "hang_mid_run"
    assert report.causes[0].id == "collective_mismatch"


@pytest.mark.parametrize(
    "fixture", ["near_miss_save_then_barrier.py", "near_miss_main_process_first.py", "near_miss_all_set.py",
                "near_miss_sharded_generate_synced.py"]
)
def test_documented_ways_show_no_fact(fixture: str) -> None:
    assert parsed(f"{CODE}/{fixture}", "code_fact") == []


def test_a_weak_pattern_never_names_the_symptom(tmp_path: Path) -> None:
    """BatchNorm without SyncBatchNorm is common in scripts that run well: the hang the user describes stays the
    symptom, and the BatchNorm pattern does not lead."""
    (tmp_path / "train.py").write_text((FIXTURES / CODE / "batchnorm_without_sync.py").read_text())
    (tmp_path / "report.txt").write_text("Multi-GPU training gets stuck after a few hundred steps, no error.\n")
    report = run_logs([tmp_path])
    assert report.symptom == "hang_mid_run"
    assert all(c.id != "batchnorm_sync" for c in report.causes)


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("import torch.distributed as dist\nif rank == 0: dist.barrier()\n", "collective_under_rank_guard"),
        ("import torch.distributed as dist\nif rank != 0:\n    pass\nelse:\n    dist.broadcast(t, 0)\n",
         "collective_under_rank_guard"),
        ("import torch.distributed as dist\nif not trainer.is_global_zero:\n    trainer.strategy.barrier()\n",
         "collective_under_rank_guard"),
        # Fabric.save and Trainer.save_checkpoint 'must be called on all processes' (Lightning's docstrings)
        ("import lightning as L\nfabric = L.Fabric(devices=2)\nif fabric.global_rank == 0:\n"
         "    fabric.save('state.pkl', state)\nfabric.barrier()\n", "collective_under_rank_guard"),
        ("import torch.distributed as dist\nif trainer.is_global_zero:\n    trainer.save_checkpoint('last.ckpt')\n",
         "collective_under_rank_guard"),
        # a seed offset by the rank, then a split the script draws itself: every rank splits the data its own way
        ("from accelerate import Accelerator\naccelerator = Accelerator()\nset_seed(42 + accelerator.process_index)\n"
         "train_ds, val_ds = random_split(ds, [0.9, 0.1])\n", "seed_per_rank_before_split"),
        ("import torch.distributed as dist\ntorch.manual_seed(args.seed + dist.get_rank())\n", "seed_per_rank"),
    ],
)
def test_branch_forms(text: str, fact: str, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(text)
    assert [f.fact for f in parsed(str(path), "code_fact")] == [fact]


@pytest.mark.parametrize(
    "text",
    [
        "import torch.distributed as dist\nif args.local_rank != -1:\n    dist.barrier()\n",
        "import torch.distributed as dist\nif world_size > 1:\n    dist.all_reduce(t)\n",
        "import torch.distributed as dist\nif rank == 0:\n    save(model)\ndist.barrier()\n",
        "import torch.distributed as dist\nif rank == 0:\n    # dist.barrier()\n    log('dist.barrier()')\n",
        # Accelerator.save writes once per machine by itself: calling it on the main process only is the documented way
        "from accelerate import Accelerator\naccelerator = Accelerator()\nif accelerator.is_main_process:\n"
        "    accelerator.save(model.state_dict(), 'model.pt')\n",
    ],
)
def test_branch_near_misses(text: str, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(text)
    assert parsed(str(path), "code_fact") == []


def test_hostile_scripts_are_linear(tmp_path: Path) -> None:
    deep = "".join(" " * i + "if rank == 0:\n" for i in range(0, 4000, 4)) + " " * 4000 + "dist.barrier()\n"
    texts = [
        "import torch.distributed as dist\n" + deep,
        "local_rank\n" + "torch.load(" + "(" * 20000 + "\n",
        "DDP(\n" + ("if rank == 0: " + "x" * 5000 + "\n") * 200,
        "local_rank\n" + "\t" * 50000 + "dist.barrier()\n",
    ]
    started = time.perf_counter()
    for i, text in enumerate(texts):
        path = tmp_path / f"t{i}.py"
        path.write_text(text)
        parsed(str(path), "code_fact")
    # a guard against quadratic or backtracking work (minutes on these inputs), not a benchmark
    assert time.perf_counter() - started < 30.0
