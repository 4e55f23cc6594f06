"""e1: uneven data under DDP: rank 0 gets 5 batches, rank 1 only 4 (no DistributedSampler).

Rank 1 finishes its epoch and waits in barrier(); rank 0 waits in its 5th backward (DDP's
gradient all_reduce).  Both time out after E2E_PG_TIMEOUT seconds.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from common import finish, log, model, setup
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    rank, world = setup()
    net = DDP(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    n = 10 if rank == 0 else 8  # each rank reads its own shard; the shards are uneven
    data = TensorDataset(torch.randn(n, 8), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=2)
    for epoch in range(1):
        for i, (x, y) in enumerate(loader):
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
