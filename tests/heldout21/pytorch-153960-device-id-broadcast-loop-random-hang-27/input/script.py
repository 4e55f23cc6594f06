import argparse
import os
import torch


def main(bad = False):
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    if bad:
        torch.distributed.init_process_group("nccl", device_id=device)
    else:
        torch.distributed.init_process_group("nccl")

    device = torch.device("cuda")
    rank = torch.distributed.get_rank()

    for i in range(10000):
        if rank == 0:
            if i % 10 == 0:
                print(i)
            a = torch.ones(3, device=device)
        else:
            a = torch.zeros(3, device=device)

        torch.distributed.broadcast(a, src=0)

    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--bad", action="store_true", help="Shows the bug")
    args = parser.parse_args()
    main(args.bad)
