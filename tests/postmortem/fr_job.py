"""Two gloo ranks with the flight recorder on; rank 1 skips the last all_reduce; both dump their buffer.

Writes OUT/nccl_trace_rank_<rank> (the pickle torch dumps on a watchdog timeout), then exits at once.
"""

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
if rank == 0:
    work = dist.all_reduce(t, async_op=True)  # rank 1 never joins this one
c10d = torch._C._distributed_c10d
dump = getattr(c10d, "_dump_fr_trace", None) or c10d._dump_nccl_trace
with open(os.path.join(out, f"nccl_trace_rank_{rank}"), "wb") as fh:
    fh.write(dump(True, True, False))
sys.stdout.flush()
os._exit(0)
