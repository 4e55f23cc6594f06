"""Training job for the hook tests (run under torchrun, gloo, CPU).

SCENARIO: ok | crash (rank 1 raises) | oom (rank 1 exceeds an RLIMIT_AS it sets itself)
| hang (rank 1 skips an all_reduce and sleeps). HOOK=1 installs diagnose (REPORT_DIR,
WATCHDOG seconds); RECORD=elastic|diagnose|both|both-inner wraps main with @record.
"""

import os
import resource
import time
from datetime import timedelta

HOOK = os.environ.get("HOOK") == "1"
if HOOK:
    import diagnose

    diagnose.install(report_dir=os.environ["REPORT_DIR"], watchdog_timeout=float(os.environ.get("WATCHDOG", "0")) or None)

import torch  # noqa: E402  (after install, as a user would write it)
import torch.distributed as dist  # noqa: E402
from torch.distributed.elastic.multiprocessing.errors import record as elastic_record  # noqa: E402

step = diagnose.step if HOOK else (lambda: None)
RECORD = os.environ.get("RECORD", "none")


def identity(fn):
    return fn


def exhaust_address_space(rank: int) -> None:
    with open("/proc/self/status") as fh:
        vm_size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm_size + 192 * 2**20, resource.RLIM_INFINITY))
    big = torch.empty(512 * 2**20, dtype=torch.uint8)  # more than the limit leaves
    print(f"rank {rank}: allocated {big.numel()} bytes", flush=True)


def main() -> None:
    scenario = os.environ["SCENARIO"]
    dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "8"))))
    rank = dist.get_rank()
    t = torch.ones(16)
    for i in range(5):
        if rank == 1 and i == 3:
            if scenario == "crash":
                try:
                    {}["batch"]
                except KeyError as exc:
                    raise ValueError(f"simulated bad batch on rank 1 at step {i}") from exc
            if scenario == "oom":
                exhaust_address_space(rank)
            if scenario == "hang":
                time.sleep(float(os.environ.get("HANG_S", "30")))
                continue
        dist.all_reduce(t)
        step()
    print(f"rank {rank}: done, sum {t[0].item():.0f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    entry = main
    if RECORD in ("diagnose", "both"):
        entry = (diagnose.record if HOOK else identity)(entry)
    if RECORD in ("elastic", "both", "both-inner"):
        entry = elastic_record(entry)
    if RECORD == "both-inner":
        entry = (diagnose.record if HOOK else identity)(entry)
    entry()
