"""d1/d2/d3: rank 1 fails at step 3 while rank 0 waits in the step's all_reduce.

E2E_MODE=raise (d1, d2): rank 1 raises ValueError.  E2E_MODE=kill (d3): rank 1 SIGKILLs itself.
E2E_MODE=raise_abort: rank 1 prints the ValueError's traceback and then dies on SIGABRT, as a rank does when
torch's C++ threads are torn down after the exception ("terminate called without an active exception").
E2E_MODE=none: trains to the end (used by c1, where the agent fails before any worker starts).
E2E_RECORD=1 (d2): main() is wrapped in torch.distributed.elastic's @record (writes error.json).
"""

from __future__ import annotations

import os
import signal
import traceback

import torch.distributed as dist
from common import finish, log, model, setup, train_step
from torch.distributed.elastic.multiprocessing.errors import record


def main() -> None:
    rank, world = setup()
    net = model()
    mode = os.environ.get("E2E_MODE", "raise")
    for step in range(6):
        if rank == 1 and step == 3:
            if mode == "raise":
                raise ValueError(f"simulated bad batch on rank {rank} at step {step}")
            if mode == "raise_abort":
                try:
                    raise ValueError(f"simulated bad batch on rank {rank} at step {step}")
                except ValueError:
                    traceback.print_exc()
                    os.abort()
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
        loss = train_step(net, step)
        dist.all_reduce(loss)
        log(f"rank {rank} step {step} loss {loss.item() / world:.4f}")
    finish()


if __name__ == "__main__":
    if os.environ.get("E2E_RECORD") == "1":
        main = record(main)
    main()
