"""A real 2-rank gloo run (CPU) that all-reduces many buffers every step: communication-bound.

Usage: python chatty_allreduce.py OUT_DIR WORLD PORT [SLOW_RANK]. Each rank writes
rank<R>.log (step prints) and trace_rank<R>.json (torch.profiler Chrome trace). A
SLOW_RANK sleeps 40 ms per step before its collectives (a straggler).
"""

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import ProfilerActivity, profile, schedule


def work(rank: int, world: int, port: int, out: Path, slow_rank: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.Linear(32, 32)
    x = torch.randn(16, 32)
    buffers = [torch.randn(20000) for _ in range(40)]
    log = (out / f"rank{rank}.log").open("w")
    print(f"world_size: {world} batch_size: 16", file=log)
    sched = schedule(wait=1, warmup=1, active=4, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out / f"trace_rank{rank}.json"))) as prof:
        for step in range(8):
            t0 = time.perf_counter()
            loss = model(x).pow(2).mean()
            loss.backward()
            if rank == slow_rank:
                time.sleep(0.04)
            for buf in buffers:
                dist.all_reduce(buf)
            prof.step()
            print(f"[rank{rank}]: step {step} loss: {loss.item():.4f} step_time: {time.perf_counter() - t0:.4f}",
                  file=log, flush=True)
    log.close()
    dist.destroy_process_group()
    # torch 2.13's CPU profiler can abort at interpreter teardown after a gloo run
    # ("terminate called without an active exception", 4 of 6 runs here) once every
    # file is written; leave without the teardown so the run's exit status is its own.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main() -> None:
    out, world, port = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    slow_rank = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    out.mkdir(parents=True, exist_ok=True)
    mp.spawn(work, args=(world, port, out, slow_rank), nprocs=world)


if __name__ == "__main__":
    main()
