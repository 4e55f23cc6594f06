import torch
import torch.distributed as dist

def setup(rank, world_size):
    # initialize the process group
    dist.init_process_group("nccl", rank=rank, world_size=world_size)

def rank():
    return int(os.environ.get("RANK") or 0)

def issue_basic(world_size):
    print(rank())
    setup(rank(), world_size)
    if rank() == 0:
        print("Master!")
    dist.barrier()
    print("here strange gpu allocation ! 2 on gpu0 and 1 on gpu1")
    input()

issue_basic(2)

# Load model checkpoints 
# Do training
