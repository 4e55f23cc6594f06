"""Start the hang job (hang_job.py) the way other launchers do, for discovery tests.

usage: launchers.py MODE NPROC
  spawn          torch.multiprocessing.spawn from a plain parent; the rank is the function's argument
  mp-spawn, mp-forkserver, mp-fork
                 multiprocessing.get_context(METHOD).Process per rank, the rank an argument
  lightning      what Lightning's subprocess launcher leaves: this process is local rank 0 and
                 starts the others with its own command line and LOCAL_RANK/NODE_RANK/WORLD_SIZE
                 (no RANK) in their environment
MASTER_ADDR/MASTER_PORT are set inside each rank, as the tutorials do, so /proc/PID/environ
shows no rank variable at all.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys

import hang_job


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker(rank: int, world: int, port: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    hang_job.run(rank, world)


def lightning(nproc: int) -> None:
    if "LOCAL_RANK" in os.environ:  # a process Lightning started
        local = int(os.environ["LOCAL_RANK"])
        hang_job.run(int(os.environ["NODE_RANK"]) * nproc + local, int(os.environ["WORLD_SIZE"]))
        return
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), NODE_RANK="0", LOCAL_RANK="0",
                      WORLD_SIZE=str(nproc))
    for local in range(1, nproc):
        subprocess.Popen([sys.executable, *sys.argv], env={**os.environ, "LOCAL_RANK": str(local)})
    hang_job.run(0, nproc)


def main() -> None:
    mode, nproc = sys.argv[1], int(sys.argv[2])
    if mode == "lightning":
        lightning(nproc)
        return
    port = str(free_port())
    if mode == "spawn":
        import torch.multiprocessing as mp

        mp.spawn(worker, args=(nproc, port), nprocs=nproc)
        return
    ctx = multiprocessing.get_context(mode.removeprefix("mp-"))
    procs = [ctx.Process(target=worker, args=(rank, nproc, port)) for rank in range(nproc)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()


if __name__ == "__main__":
    main()
