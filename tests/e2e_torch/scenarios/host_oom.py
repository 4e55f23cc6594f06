"""i1: host out of memory on rank 1 through RLIMIT_AS (the same as `ulimit -v`).

Rank 1 caps its address space a little above its current size, then allocates 256 MiB.
"""

from __future__ import annotations

import resource

import torch
import torch.distributed as dist
from common import finish, log, model, setup, train_step


def vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def main() -> None:
    rank, world = setup()
    net = model()
    for step in range(6):
        loss = train_step(net, step)
        if rank == 1 and step == 2:
            limit = vm_size() + 64 * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            log(f"rank {rank} building a bigger batch for step {step}")
            torch.ones(64 * 2**20)  # 256 MiB of float32
        dist.all_reduce(loss)
        log(f"rank {rank} step {step} loss {loss.item() / world:.4f}")
    finish()


if __name__ == "__main__":
    main()
