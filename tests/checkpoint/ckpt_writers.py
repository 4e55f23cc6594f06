"""Write real checkpoints with real torch (CPU) in the layouts users have."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch


def trained() -> tuple[torch.nn.Module, torch.optim.Optimizer, Any, Any]:
    """A small model after one real optimizer step, with its optimizer, scheduler and grad scaler."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(optim, 1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale(model(torch.randn(2, 8)).sum()).backward()
    scaler.step(optim)
    scaler.update()
    sched.step()
    return model, optim, sched, scaler


def complete_state(model: Any, optim: Any, sched: Any, scaler: Any) -> dict[str, Any]:
    """Everything a faithful resume needs, including numpy RNG state (which weights_only refuses)."""
    return {
        "model": model.state_dict(), "optimizer": optim.state_dict(), "scheduler": sched.state_dict(),
        "scaler": scaler.state_dict(), "step": 100, "epoch": 2,
        "torch_rng": torch.get_rng_state(), "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(), "sampler": {"epoch": 2, "seed": 0, "consumed": 3200},
    }


def write_torch_files(out: Path) -> dict[str, Path]:
    """torch.save model-only, complete, partial, legacy and wrapped (DDP/compile/sharded) files."""
    model, optim, sched, scaler = trained()
    full = complete_state(model, optim, sched, scaler)
    paths = {name: out / f"{name}.pt" for name in
             ("model_only", "complete", "no_optimizer", "legacy", "ddp", "compiled", "tp_shard")}
    torch.save(model.state_dict(), paths["model_only"])
    torch.save(full, paths["complete"])
    torch.save({k: v for k, v in full.items() if k not in ("optimizer", "scheduler", "scaler")},
               paths["no_optimizer"])
    legacy = {k: full[k] for k in ("model", "optimizer", "step", "torch_rng")}
    torch.save(legacy, paths["legacy"], _use_new_zipfile_serialization=False)
    torch.save(torch.nn.DataParallel(model).state_dict(), paths["ddp"])
    torch.save(torch.compile(model).state_dict(), paths["compiled"])
    shard = {k: (v.chunk(2)[0] if v.dim() == 2 else v) for k, v in model.state_dict().items()}
    torch.save(shard, paths["tp_shard"])
    return paths


def write_lightning(out: Path, *, complete: bool = True) -> Path:
    """A Lightning-shaped .ckpt dict (as Trainer.save_checkpoint lays it out)."""
    model, optim, sched, scaler = trained()
    ckpt: dict[str, Any] = {
        "epoch": 3, "global_step": 120, "pytorch-lightning_version": "2.4.0",
        "state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
        "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"total": {"completed": 3}}}},
        "callbacks": {"ModelCheckpoint{'monitor': 'val_loss'}": {"best_model_score": None}},
        "hparams_name": "kwargs", "hyper_parameters": argparse.Namespace(lr=1e-3),
    }
    if complete:
        ckpt.update(optimizer_states=[optim.state_dict()],
                    lr_schedulers=[sched.state_dict()], MixedPrecision=scaler.state_dict())
    else:
        ckpt.update(optimizer_states=[], lr_schedulers=[])
    path = out / ("lightning.ckpt" if complete else "lightning_weights.ckpt")
    torch.save(ckpt, path)
    return path


def write_trainer(out: Path, *, world: int = 2, drop: tuple[str, ...] = ()) -> Path:
    """A Hugging Face Trainer-shaped checkpoint-N folder; `drop` names files to leave out."""
    from safetensors.torch import save_file

    model, optim, sched, scaler = trained()
    out.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, out / "model.safetensors")
    torch.save(optim.state_dict(), out / "optimizer.pt")
    torch.save(sched.state_dict(), out / "scheduler.pt")
    torch.save(scaler.state_dict(), out / "scaler.pt")
    for rank in range(world):
        rng = {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.get_rng_state()}
        torch.save(rng, out / f"rng_state_{rank}.pth")
    (out / "trainer_state.json").write_text(json.dumps({"global_step": 500, "epoch": 1.5, "log_history": []}))
    torch.save(argparse.Namespace(per_device_train_batch_size=8), out / "training_args.bin")
    for name in drop:
        (out / name).unlink()
    return out


def write_accelerate(out: Path) -> Path:
    """An accelerate save_state folder (no step: accelerate does not save one)."""
    from safetensors.torch import save_file

    model, optim, sched, scaler = trained()
    out.mkdir(parents=True)
    save_file(model.state_dict(), out / "model.safetensors")
    torch.save(optim.state_dict(), out / "optimizer.bin")
    torch.save(sched.state_dict(), out / "scheduler.bin")
    torch.save(scaler.state_dict(), out / "scaler.pt")
    for rank in range(2):
        torch.save({"random_state": random.getstate(), "numpy_random_seed": np.random.get_state(),
                    "torch_manual_seed": torch.get_rng_state()}, out / f"random_states_{rank}.pkl")
    return out


def write_deepspeed(out: Path, *, dp: int = 2, drop_rank: int | None = None) -> Path:
    """A DeepSpeed ZeRO-2-shaped folder: `latest`, model states, one optimizer shard per DP rank."""
    model, optim, sched, _ = trained()
    tag = out / "global_step10"
    tag.mkdir(parents=True)
    (out / "latest").write_text("global_step10")
    torch.save({"module": model.state_dict(), "buffer_names": [], "optimizer": None,
                "lr_scheduler": sched.state_dict(), "sparse_tensor_module_names": set(),
                "skipped_steps": 0, "global_steps": 10, "global_samples": 320, "dp_world_size": dp,
                "mp_world_size": 1, "ds_config": {"zero_optimization": {"stage": 2}}, "ds_version": "0.14.0"},
               tag / "mp_rank_00_model_states.pt")
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    for rank in range(dp):
        if rank == drop_rank:
            continue
        part = flat.chunk(dp)[rank].clone()
        osd = {"zero_stage": 2, "loss_scaler": {"cur_scale": 65536.0}, "dynamic_loss_scale": True,
               "overflow": False, "partition_count": [dp], "base_optimizer_state": {"state": {0: {
                   "exp_avg": torch.zeros_like(part), "exp_avg_sq": torch.zeros_like(part)}}},
               "single_partition_of_fp32_groups": [part]}
        torch.save({"optimizer_state_dict": osd, "ds_config": {}, "ds_version": "0.14.0"},
                   tag / f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt")
    return out
