"""a1/a2/a3: a collective that only some ranks call.

E2E_MODE=sleep (a1, a2): at step 3 rank 1 skips the loss all_reduce and sleeps (a true hang).
E2E_MODE=desync (a3): at step 3 only rank 0 all_reduces an extra 32-float metric
(gloo: 128 bytes against rank 1's next 4-byte all_reduce -> EnforceNotMet, SIGABRT).
"""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist
from common import finish, log, model, setup, train_step


def main() -> None:
    rank, world = setup()
    net = model()
    mode = os.environ.get("E2E_MODE", "sleep")
    for step in range(6):
        loss = train_step(net, step)
        if mode == "sleep" and rank == 1 and step == 3:
            time.sleep(120)  # skips the all_reduce below; torchrun SIGTERMs it later
        else:
            dist.all_reduce(loss)
        if mode == "desync" and rank == 0 and step == 3:
            metric = torch.ones(32)
            dist.all_reduce(metric)
        log(f"rank {rank} step {step} loss {loss.item() / world:.4f}")
    finish()


if __name__ == "__main__":
    main()
