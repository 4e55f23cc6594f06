"""A real 2-rank gloo job for torchrun --tee: rank 1 sleeps 40 ms per step before the all-reduce (a straggler).

Each rank prints `step N step_time: S comm_time: C` (C: time in the all-reduce) to stdout; torchrun adds its own prefix to every line.
"""

import time

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    buf = torch.ones(1000)
    for step in range(8):
        t0 = time.perf_counter()
        if rank == 1:
            time.sleep(0.04)
        else:
            time.sleep(0.005)
        t1 = time.perf_counter()
        dist.all_reduce(buf)
        t2 = time.perf_counter()
        print(f"step {step} step_time: {t2 - t0:.4f} comm_time: {t2 - t1:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
