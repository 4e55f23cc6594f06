"""Write real per-rank sharded state dicts from 2 gloo ranks (CPU): DTensor, FSDP2, ShardedTensor, DCP."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _rank(rank: int, world: int, out: str, port: int) -> None:
    import torch.distributed._shard.sharded_tensor as st
    from torch.distributed._shard.sharding_spec import ChunkShardingSpec
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    tp = {k: distribute_tensor(v.detach(), mesh, [Shard(0)] if v.dim() == 2 else [Replicate()])
          for k, v in _model().state_dict().items()}
    torch.save(tp, os.path.join(out, f"dtensor_rank{rank}.pt"))
    fsdp = _model()
    fully_shard(fsdp, mesh=mesh)
    torch.save(fsdp.state_dict(), os.path.join(out, f"fsdp2_rank{rank}.pt"))
    dcp.save({"model": fsdp.state_dict()}, checkpoint_id=os.path.join(out, "fsdp2_dcp"))
    spec = ChunkShardingSpec(dim=0, placements=[f"rank:{r}/cpu" for r in range(world)])
    torch.save({"0.weight": st.zeros(spec, 16, 8)}, os.path.join(out, f"sharded_tensor_rank{rank}.pt"))
    dist.barrier()  # no destroy_process_group(): with gloo in torch 2.13 it sometimes aborts at exit (SIGABRT)


def write(out: str, *, world: int = 2, port: int | None = None) -> None:
    """Spawn `world` gloo ranks that each write their shard of every layout into `out`."""
    if port is None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    mp.spawn(_rank, args=(world, out, port), nprocs=world, join=True)
