"""The scenario table: lab-notes section 2 cases that fail in seconds on CPU (gloo).

Evidence regexes are the exact texts lab-notes.md reports for torch 2.13 (with our timeouts).
Expectations follow DESIGN.md's hang decision table; where the logs cannot separate causes the
expectation is a top-3 one and `note` says why.
"""

from __future__ import annotations

from e2e_harness import Expect, Scenario

HANG_TIMEOUT = 8.0  # lab-notes section 8: PG timeout for hang cases
STORE_TIMEOUT = 5.0  # lab-notes section 8: store timeout for rendezvous failures
DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
# A peer that died is seen as either text (a race; both seen here, also for a plain exception):
# lab-notes 9.2 ties the second one to hung peers only.
# The peer's "Connection closed by peer" (or "reset") is not asserted: when torchrun tears the peer down
# before it notices the lost connection, it never prints it (seen under load), and the diagnosis must not need it.
# A rank that raised usually exits 1, but sometimes aborts at interpreter exit
# ("terminate called without an active exception", exitcode -6) - seen in d1.
RAISED_EXIT = r"exitcode\s*: (1 |-6 \(pid: \d+\)\s+\(SIGABRT\))"

_CRASH = Expect(top1=("rank_failure",), ranks=(1,), not_ranks=(0,))
_MISMATCH = Expect(top1=("collective_mismatch",),
                   note="which side of a mismatch is 'wrong' is not decidable from logs: ranks not asserted")

SCENARIOS: list[Scenario] = [
    Scenario("d1", "crash.py", _CRASH, (
        r"\[rank1\]: ValueError: simulated bad batch on rank 1 at step 3",
        RAISED_EXIT,
    ), env={"E2E_MODE": "raise"}),
    Scenario("d2", "crash.py", _CRASH, (
        r"ValueError: simulated bad batch on rank 1 at step 3",
        r'"message": "ValueError: simulated bad batch on rank 1 at step 3"',
    ), env={"E2E_MODE": "raise", "E2E_RECORD": "1"}),
    Scenario("d3", "crash.py", Expect(
        top1=("rank_failure", "host_memory"), ranks=(1,), not_ranks=(0,),
        note="rank 1 leaves no traceback and no error file: its SIGKILL is the evidence. When the launcher "
             "tears rank 0 down before it notices the lost peer, nothing but the SIGKILL is left, and a SIGKILL "
             "with no other error is most often the OOM killer (only dmesg tells), so host_memory is accepted",
    ), (
        r"exitcode\s*: -9 \(pid: \d+\)",
        r"Signal 9 \(SIGKILL\) received by PID \d+",
    ), env={"E2E_MODE": "kill"}),
    Scenario("a1", "skip_allreduce.py", Expect(
        top1=("collective_mismatch", "checkpoint_barrier", "input_pipeline_bound"),
        in_top3=("collective_mismatch",), ranks=(1,), not_ranks=(0,),
        note="without DETAIL the logs show only that rank 1 went silent (SIGTERM, no timeout) while rank 0 "
             "timed out in recv: the culprit is clear, the reason (skipped collective vs other work) is not",
    ), (
        r"Timed out waiting 8000ms for recv operation to complete",
        r"Signal 15 \(SIGTERM\) received by PID \d+",
    ), env={"E2E_MODE": "sleep"}, pg_timeout=HANG_TIMEOUT),
    Scenario("a2", "skip_allreduce.py", Expect(top1=("collective_mismatch",), ranks=(1,), not_ranks=(0,)), (
        r"Rank 1 failed to pass monitoredBarrier in 8000 ms",
        r"Ranks 1 failed to pass monitoredBarrier in 8000 ms",
    ), env={"E2E_MODE": "sleep", **DETAIL}, pg_timeout=HANG_TIMEOUT),
    Scenario("a3", "skip_allreduce.py", _MISMATCH, (
        r"terminate called after throwing an instance of 'gloo::EnforceNotMet'",
        r"\d+ vs 4\. Received data size doesn't match expected size\. Is there a distributed collective mismatch",
        r"exitcode\s*: -6",
    ), env={"E2E_MODE": "desync"}),
    Scenario("b1", "mismatch.py", _MISMATCH, (
        r"gloo::EnforceNotMet",
        r"Received data size doesn't match expected size\. Is there a distributed collective mismatch",
    ), env={"E2E_MODE": "shape"}),
    Scenario("b2", "mismatch.py", _MISMATCH, (
        r"Detected mismatch between collectives on ranks",
        r"Tensor Tensor shapes: 4vs 8",
    ), env={"E2E_MODE": "shape", **DETAIL}),
    Scenario("b4", "mismatch.py", _MISMATCH, (
        r"Detected mismatch between collectives on ranks",
        r"Op type: ALLREDUCEvs BROADCAST",
    ), env={"E2E_MODE": "op", **DETAIL}),
    Scenario("c1", "crash.py", Expect(
        top1=("rendezvous_misconfig", "stale_processes"), in_top3=("rendezvous_misconfig",),
        note="EADDRINUSE: a wrong MASTER_PORT or a leftover process holding it; logs cannot tell which",
    ), (
        r"DistNetworkError: The server socket has failed to listen on any local network address",
        r"EADDRINUSE",
    ), env={"E2E_MODE": "none"}, kind="port_in_use", variants=("console",)),
    Scenario("c3", "rendezvous.py", Expect(
        top1=("rendezvous_misconfig", "launcher_misconfig"), ranks=(2,), not_ranks=(0, 1),
        note="the culprit is the rank that never came (2); ranks 0 and 1 only time out",
    ), (
        r"DistStoreError: Timed out after \d+ seconds waiting for clients\. 2/3 clients joined\.",
        r"DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/0",
    ), pg_timeout=STORE_TIMEOUT, kind="manual", world_size=3, variants=("ranklogs",)),
    Scenario("e1", "uneven_data.py", Expect(top1=("uneven_dataloader",), ranks=(1,)), (
        r"Timed out waiting 8000ms for recv operation to complete",
        r"rank 0 epoch 0 batch 4/5",
        r"rank 1 epoch 0 batch 4/4",
    ), pg_timeout=HANG_TIMEOUT),
    Scenario("e2", "uneven_data.py", Expect(
        top1=("uneven_dataloader",), in_top3=("uneven_dataloader",),
        note="rank 0's tqdm bar stops one batch short of its total (progress-stops-short-of-its-total)",
    ), (
        r"Timed out waiting 8000ms for recv operation to complete",
        r"Training:  96%\|[^|]*\| 24/25 ",
    ), env={"E2E_TQDM": "1"}, pg_timeout=HANG_TIMEOUT, variants=("logdir",)),
    Scenario("f1", "slow_checkpoint.py", Expect(top1=("checkpoint_barrier",), ranks=(0,), not_ranks=(1,)), (
        r"rank 0 saving checkpoint to ",
        r"Timed out waiting 8000ms for recv operation to complete",
    ), pg_timeout=HANG_TIMEOUT),
    Scenario("i1", "host_oom.py", Expect(
        top1=("host_memory", "rank_failure"), in_top3=("host_memory",), ranks=(1,), not_ranks=(0,),
        note="host_memory may come as the refinement of rank_failure (why rank 1 died)",
    ), (
        r"DefaultCPUAllocator: can't allocate memory: you tried to allocate 268435456 bytes\. "
        r"Error code 12 \(Cannot allocate memory\)",
    )),
]

BY_NAME = {sc.name: sc for sc in SCENARIOS}
CASES = [f"{sc.name}-{v}" for sc in SCENARIOS for v in sc.variants]


def split_case(case: str) -> tuple[Scenario, str]:
    name, variant = case.split("-", 1)
    return BY_NAME[name], variant
