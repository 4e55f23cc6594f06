# test.py
import os
import functools

import torch
import torch.nn as nn

from torch.distributed.fsdp import (
    FullyShardedDataParallel as FSDP,
    MixedPrecision,
    ShardingStrategy,
)
from torch.distributed.fsdp.wrap import (
    transformer_auto_wrap_policy,
)

torch.distributed.init_process_group(backend='nccl', init_method="env://",
                                     world_size=int(os.environ['WORLD_SIZE']), rank=int(os.environ["RANK"]))
torch.cuda.set_device(int(os.environ["RANK"]))
torch.distributed.barrier()

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(100, 100)

        self.k_nograd = nn.Linear(100, 100)
        for param in self.k_nograd.parameters():
            param.requires_grad=False
