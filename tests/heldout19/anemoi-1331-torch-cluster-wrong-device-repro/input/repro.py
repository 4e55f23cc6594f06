import os
import torch
from torch_cluster import radius

dev = torch.device(f"cuda:{os.environ['SLURM_LOCALID']}")
# torch.cuda.set_device(dev)
x = torch.rand(100_000, 3, device=dev)
