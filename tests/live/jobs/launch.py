"""A plain launcher (no torchrun): starts N ranks with RANK/WORLD_SIZE/MASTER_* set and waits for them.

usage: launch.py NPROC SCRIPT   (the ranks inherit the rest of the environment)
With LIVE_AS_SRUN=<job id> it sets only the variables srun sets (SLURM_JOB_ID, SLURM_PROCID, ...).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    nproc, script = int(sys.argv[1]), sys.argv[2]
    port = str(free_port())
    procs = []
    for rank in range(nproc):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(nproc),
               "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        if os.environ.get("LIVE_AS_SRUN"):
            for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
                env.pop(key)
            env.update({"SLURM_JOB_ID": os.environ["LIVE_AS_SRUN"], "SLURM_PROCID": str(rank),
                        "SLURM_LOCALID": str(rank), "SLURM_NTASKS": str(nproc), "SLURM_NNODES": "1"})
        procs.append(subprocess.Popen([sys.executable, script], env=env))
    for proc in procs:  # rank 0 first: a dead rank 1 stays a zombie meanwhile
        proc.wait()


if __name__ == "__main__":
    main()
