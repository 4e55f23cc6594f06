"""f1: rank 0 writes a checkpoint slowly (storage stall) while rank 1 waits in barrier().

Rank 1 times out after E2E_PG_TIMEOUT seconds; torchrun then SIGTERMs rank 0 mid-save.
"""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist
from common import finish, log, model, setup, train_step


def save_checkpoint(net: torch.nn.Module, rank: int, step: int) -> None:
    path = os.path.join(os.environ.get("E2E_WORKDIR", "."), f"checkpoint-{step}.pt")
    log(f"rank {rank} saving checkpoint to {path}")
    torch.save({"model": net.state_dict(), "step": step}, path)
    time.sleep(120)  # a stalled write on slow shared storage
    log("checkpoint saved")


def main() -> None:
    rank, world = setup()
    net = model()
    for step in range(6):
        loss = train_step(net, step)
        dist.all_reduce(loss)
        log(f"rank {rank} step {step} loss {loss.item() / world:.4f}")
        if step == 3:
            if rank == 0:
                save_checkpoint(net, rank, step)
            dist.barrier()
    finish()


if __name__ == "__main__":
    main()
