"""A tiny gloo job that hangs in a chosen way (LIVE_SCENARIO), for live probe tests.

Each rank touches ``$LIVE_MARK_DIR/rank<N>.ready`` just before the call that hangs.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

SCENARIO = os.environ.get("LIVE_SCENARIO", "skip_allreduce")
MARKS = Path(os.environ.get("LIVE_MARK_DIR", "."))
TIMEOUT = float(os.environ.get("LIVE_PG_TIMEOUT", "8"))


def ready(rank: int) -> None:
    """Tell the test this rank reached its hanging call."""
    (MARKS / f"rank{rank}.ready").write_text(str(os.getpid()))


def save_checkpoint(rank: int) -> None:
    """A 'checkpoint' that takes far too long."""
    ready(rank)
    time.sleep(600)


def skip_allreduce(rank: int) -> None:
    t = torch.ones(4)
    if rank != 1:
        ready(rank)
        dist.all_reduce(t)
    else:
        ready(rank)
        time.sleep(600)


def checkpoint(rank: int) -> None:
    if rank == 0:
        save_checkpoint(rank)
    ready(rank)
    dist.barrier()


def mismatch(rank: int) -> None:
    t = torch.ones(4)
    ready(rank)
    if rank == 1:
        dist.broadcast(t, src=0)
    else:
        dist.all_reduce(t)


def uneven(rank: int) -> None:
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    batches = 5 if rank == 0 else 4
    for step in range(batches):
        if step == 4:
            ready(rank)
        model(torch.ones(2, 4)).sum().backward()
    ready(rank)
    dist.barrier()


class SlowDataset(torch.utils.data.Dataset):
    """Items that take far too long on rank 0 (a stalled storage read)."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> torch.Tensor:
        if int(os.environ["RANK"]) == 0:
            time.sleep(600)
        return torch.ones(4)


def dataloader(rank: int) -> None:
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=2, num_workers=1)
    ready(rank)
    for batch in loader:
        dist.all_reduce(batch)


def slow_before(rank: int) -> None:
    """Rank 1 is slow (a long sleep) before the all_reduce the others already wait in: coming, not skipped."""
    t = torch.ones(4)
    ready(rank)
    if rank == 1:
        time.sleep(600)
    dist.all_reduce(t)


def skip_continue(rank: int) -> None:
    """Rank 1 sleeps, then `continue`s past the all_reduce written after it: skipped, though earlier in the file."""
    t = torch.ones(4)
    for step in range(3):
        if rank == 1 and step == 1:
            ready(rank)
            time.sleep(600)
            continue
        if step == 1:
            ready(rank)
        dist.all_reduce(t)


def busy(seconds: float) -> int:
    """Pure-Python work: its counter moves between two stack samples."""
    count = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        count += 1
    return count


def slow_compute(rank: int) -> None:
    """Rank 1 computes alone before the all_reduce the others wait in."""
    t = torch.ones(4)
    ready(rank)
    if rank == 1:
        busy(600)
    dist.all_reduce(t)


def healthy(rank: int) -> None:
    """A healthy loop: an all_reduce per step and a little work."""
    for step in range(10**9):
        if step == 3:
            ready(rank)
        dist.all_reduce(torch.ones(4))
        time.sleep(0.01)


def healthy_slow(rank: int) -> None:
    """Healthy but slow: each step works 0.3 s before its all_reduce."""
    for step in range(10**9):
        if step == 1:
            ready(rank)
        time.sleep(0.3)
        dist.all_reduce(torch.ones(4))


def _leave_orphan() -> None:
    """Fork a child that outlives this rank and keeps its sockets open (as NCCL's helpers do)."""
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    (MARKS / "orphan1.pid").write_text(str(child))


def dead(rank: int) -> None:
    """Rank 1 dies; an orphaned child keeps its sockets open, so the peers wait (as with NCCL)."""
    t = torch.ones(4)
    if rank == 1:
        _leave_orphan()
        os._exit(3)
    ready(rank)
    dist.all_reduce(t)


def dead_traceback(rank: int) -> None:
    """Like ``dead``, but rank 1 prints a Python traceback before it dies (a job's output file shows it)."""
    t = torch.ones(4)
    if rank == 1:
        _leave_orphan()
        try:
            raise RuntimeError("rank 1 hit a bad batch (raised on purpose)")
        except RuntimeError:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
    ready(rank)
    dist.all_reduce(t)


def run(rank: int | None = None, world: int | None = None) -> None:
    """Join the gloo group (as `rank` of `world`, or from the environment) and run the scenario."""
    if rank is None and "RANK" not in os.environ:  # srun-style: set after exec, so invisible in /proc/PID/environ
        os.environ.update(RANK=os.environ["SLURM_PROCID"], WORLD_SIZE=os.environ["SLURM_NTASKS"])
    if rank is not None:  # set in-process: invisible in /proc/PID/environ, as launchers that pass the rank
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    rank = dist.get_rank()
    dist.all_reduce(torch.ones(1))
    globals()[SCENARIO](rank)
    time.sleep(600)


def main() -> None:
    args = sys.argv[1:]
    if "--rank" in args:  # a shell loop passing the rank as an argument
        run(int(args[args.index("--rank") + 1]), int(args[args.index("--world-size") + 1]))
    else:
        run()


if __name__ == "__main__":
    main()
