"""Write a real torch.distributed.checkpoint folder from 2 gloo ranks (CPU): `python dcp_writer.py DIR [STEP]`."""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp


def _rank(rank: int, world: int, out: str, port: int, steps: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    optim = torch.optim.Adam(model.parameters())
    sched = torch.optim.lr_scheduler.StepLR(optim, 1)
    model(torch.randn(2, 8)).sum().backward()
    optim.step()
    sched.step()
    for step in range(1, steps + 1):
        state = {"model": model.state_dict(), "optim": optim.state_dict(),
                 "scheduler": sched.state_dict(), "step": step}
        dcp.save(state, checkpoint_id=os.path.join(out, f"step_{step}") if steps > 1 else out)
    dist.destroy_process_group()


def write(out: str, *, world: int = 2, port: int = 29611, steps: int = 1) -> None:
    """Spawn `world` gloo ranks that each save their part of a DCP checkpoint into `out`."""
    mp.spawn(_rank, args=(world, out, port, steps), nprocs=world, join=True)


if __name__ == "__main__":
    write(sys.argv[1], steps=int(sys.argv[2]) if len(sys.argv) > 2 else 1)
