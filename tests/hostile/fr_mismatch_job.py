"""Three gloo ranks with the flight recorder on: after three all_reduces, rank 2 issues a broadcast where
ranks 0 and 1 issue an all_reduce (async, never waited); every rank dumps its buffer and exits."""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

out = sys.argv[1]
dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank = dist.get_rank()
t = torch.ones(16)
for _ in range(3):
    dist.all_reduce(t)
work = dist.broadcast(t, src=2, async_op=True) if rank == 2 else dist.all_reduce(t, async_op=True)
c10d = torch._C._distributed_c10d
dump = getattr(c10d, "_dump_fr_trace", None) or c10d._dump_nccl_trace
with open(os.path.join(out, f"nccl_trace_rank_{rank}"), "wb") as fh:
    fh.write(dump(True, True, False))
sys.stdout.flush()
os._exit(0)
