# 3.test_cases/pytorch/FSDP/src/train.py (FSDP2 version), launched with torchrun under Slurm
# SageMaker HyperPod, 4 x p5.48xlarge (8 x H100 each), PyTorch 2.7.1+cu128, NCCL 2.28.3, Slurm 24.11.0
def main(args):
    dist.init_process_group()
    global_rank = dist.get_rank()
    device = global_rank % torch.cuda.device_count()
    world_size = dist.get_world_size()
    ...
