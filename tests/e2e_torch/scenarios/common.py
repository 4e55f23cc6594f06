"""Shared setup for the e2e scenario scripts: gloo init with a short timeout, a tiny model, step logs.

Environment read here (set by the harness in ../conftest.py):
  E2E_PG_TIMEOUT  process-group timeout in seconds (lab-notes section 8: 8 s for hangs)
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def setup() -> tuple[int, int]:
    """Initialise the default gloo process group from the env:// variables torchrun sets."""
    timeout = float(os.environ.get("E2E_PG_TIMEOUT", "20"))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    log(f"init done: rank {rank} of {world}, backend gloo, timeout {timeout:.0f}s")
    return rank, world


def log(msg: str) -> None:
    """Print a timestamped line the way small training scripts do."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} | {msg}", flush=True)


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


def train_step(net: torch.nn.Module, step: int) -> torch.Tensor:
    """One step of fake training: forward, backward, a loss all_reduce for logging."""
    x = torch.randn(4, 8)
    loss = net(x).pow(2).mean()
    loss.backward()
    return loss.detach().reshape(1)


def finish() -> None:
    dist.barrier()
    dist.destroy_process_group()
    log("training finished")
    sys.stdout.flush()
