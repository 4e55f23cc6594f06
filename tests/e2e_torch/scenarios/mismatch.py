"""b1/b2/b4: ranks call mismatched collectives at step 2.

E2E_MODE=shape (b1 plain, b2 with TORCH_DISTRIBUTED_DEBUG=DETAIL): all_reduce of 4 vs 8 floats.
E2E_MODE=op (b4 with DETAIL): rank 0 all_reduce, rank 1 broadcast.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from common import finish, log, model, setup, train_step


def main() -> None:
    rank, world = setup()
    net = model()
    mode = os.environ.get("E2E_MODE", "shape")
    for step in range(4):
        loss = train_step(net, step)
        dist.all_reduce(loss)
        if step == 2:
            if mode == "shape":
                dist.all_reduce(torch.ones(4 if rank == 0 else 8))
            elif rank == 0:
                dist.all_reduce(torch.ones(4))
            else:
                dist.broadcast(torch.ones(4), src=0)
        log(f"rank {rank} step {step} loss {loss.item() / world:.4f}")
    finish()


if __name__ == "__main__":
    main()
