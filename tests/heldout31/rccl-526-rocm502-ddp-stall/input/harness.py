import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.optim as optim

if __name__ == '__main__':
    local_rank = 0
    if 'LOCAL_RANK' in os.environ:
        local_rank = int(os.environ["LOCAL_RANK"])

    torch.cuda.set_device(local_rank)
    print('Initialized GPU {}'.format(local_rank))

    dist.init_process_group(backend='nccl')
    print('Initialized process group on rank {}'.format(dist.get_rank()))

    rank = dist.get_rank()
    tensor_sizes = []
    k = 1
    for i in range(16):
        tensor_sizes.append(k)
        k*=2

    for tensor_size in tensor_sizes:
        print(tensor_size)
        model = torch.nn.Linear(tensor_size, tensor_size).to(local_rank)
        ddp_model = DDP(model, device_ids=[local_rank])
        optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
