"""A healthy 2-rank DDP run: gloo, a tiny model, a DistributedSampler, step lines, a checkpoint save on rank 0."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
sampler = DistributedSampler(data, num_replicas=world, rank=rank, drop_last=True)
loader = DataLoader(data, batch_size=8, sampler=sampler)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        t0 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f} step_time {time.perf_counter() - t0:.4f}",
              flush=True)
if rank == 0:
    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step},
               os.path.join(os.environ["GOODRUN_OUT"], "ckpt.pt"))
dist.barrier()
# No destroy_process_group(): with gloo in torch 2.13 it sometimes aborts at exit ("terminate called without an
# active exception", about 1 run in 8 here), a teardown race that is not what a healthy-run test is about.
