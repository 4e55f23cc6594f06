"""e1: uneven data under DDP: rank 0 gets 5 batches, rank 1 only 4 (no DistributedSampler).

Rank 1 finishes its epoch and waits in barrier(); rank 0 waits in its 5th backward (DDP's
gradient all_reduce).  Both time out after E2E_PG_TIMEOUT seconds.
e2 (E2E_TQDM=1): the same with 25 and 24 batches and a tqdm bar per rank on stderr, as training scripts
show progress: rank 0's bar stops at 24/25.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from common import finish, log, model, setup
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    rank, world = setup()
    net = DDP(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    bar = os.environ.get("E2E_TQDM") == "1"
    # each rank reads its own shard; the shards are uneven
    n = (50 if rank == 0 else 48) if bar else (10 if rank == 0 else 8)
    data = TensorDataset(torch.randn(n, 8), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=2)
    for epoch in range(1):
        batches = loader
        if bar:
            from tqdm import tqdm

            batches = tqdm(loader, desc="Training", file=sys.stderr, mininterval=0)
        for i, (x, y) in enumerate(batches):
            loss = (net(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log(f"rank {rank} epoch {epoch} batch {i + 1}/{len(loader)} loss {loss.item():.4f}")
        log(f"rank {rank} epoch {epoch} done, waiting for the other ranks")
        dist.barrier()
    finish()


if __name__ == "__main__":
    main()
