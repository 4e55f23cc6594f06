"""Generate the logs of a 4,096-rank NCCL job where one rank died of a CUDA OOM and all others
hit the ProcessGroupNCCL watchdog in the all_reduce it never joined.

Texts follow torch 2.4-2.6 ProcessGroupNCCL and torchrun output as seen in real logs. Two layouts:
  flat    DIR/rank-R.log (+ DIR/torchrun-node0000.log, the node-0 agent's console)
  logdir  DIR/node-NNNN/<run_id>_<rand>/attempt_0/<local_rank>/stderr.log (+ the node-0 console);
          rank numbers then come only from the `[rankR]:` prefixes in the content.
"""

from __future__ import annotations

import random
from pathlib import Path

WORLD = 4096
PER_NODE = 8
CULPRIT = 1234
SEQ = 183021
ROOT_CAUSE_VICTIM = 0  # what node 0's torchrun table names
RUN_ID = "7f3c2a9e-5b41-4d0e-9c61-2f8e1a0d4b77"

_SITE = "/opt/conda/lib/python3.11/site-packages"
_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity "
    "of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.89 GiB memory "
    "in use. Of the allocated memory 74.31 GiB is allocated by PyTorch, and 2.12 GiB is reserved by PyTorch "
    "but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
    "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
_WORK = f"WorkNCCL(SeqNum={SEQ}, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=600000)"
_FRAMES = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, "
    f"std::allocator<char> >) + 0x98 (0x7f92e62535e8 in {_SITE}/torch/lib/libc10.so)\n"
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
    f"std::ratio<1l, 1000l> > >) + 0x23d (0x7f92e756ea6d in {_SITE}/torch/lib/libtorch_cuda.so)\n"
    f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0xc80 (0x7f92e75707f0 in {_SITE}/torch/lib/libtorch_cuda.so)\n"
    f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f92e7571efd in {_SITE}/torch/lib/libtorch_cuda.so)\n"
    "frame #4: <unknown function> + 0xd8198 (0x7f92d7559198 in /opt/conda/bin/../lib/libstdc++.so.6)\n"
    "frame #5: clone + 0x3f (0x7f933d25eadf in /usr/lib/x86_64-linux-gnu/libc.so.6)\n"
)


def host(rank: int) -> str:
    return f"gpu{rank // PER_NODE:04d}"


def _init_lines(rank: int, pid: int, rng: random.Random) -> list[str]:
    h, local = host(rank), rank % PER_NODE
    p = f"{h}:{pid}:{pid}"
    ip = f"10.{rank // PER_NODE // 250}.{rank // PER_NODE % 250}.{local + 10}"
    out = [
        f"{p} [{local}] NCCL INFO Bootstrap : Using ib0:{ip}<0>",
        f"{p} [{local}] NCCL INFO cudaDriverVersion 12040",
        f"{p} [{local}] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ib0",
        f"{p} [{local}] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so), using internal implementation",
        f"{p} [{local}] NCCL INFO NET/IB : Using [0]mlx5_{local}:1/IB [RO]; OOB ib0:{ip}<0>",
        f"{p} [{local}] NCCL INFO Using network IB",
    ]
    if rank == 0:
        out.insert(1, f"{p} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
    for ch in range(4):
        peer = (rank + 1) % WORLD
        out.append(f"{p} [{local}] NCCL INFO Channel {ch:02d}/0 : {rank}[{local}] -> {peer}[{peer % PER_NODE}] "
                   f"[send] via NET/IB/{local}/GDRDMA")
    out.append(f"{p} [{local}] NCCL INFO comm 0x{rng.getrandbits(40):x} rank {rank} nranks {WORLD} cudaDev {local} "
               f"nvmlDev {local} busId {0x18000 + local * 0x11000:x} commId 0x6c1b2f0e9d3a4b51 - Init COMPLETE")
    return out


def _steps(rank: int, rng: random.Random) -> list[str]:
    out = []
    for i, step in enumerate(range(SEQ - 10, SEQ)):
        loss = 2.31 - 0.001 * i + rng.random() * 0.01
        out.append(f"[rank{rank}]:2024-11-29 10:01:{10 + i * 4} | step {step} | loss {loss:.4f} | lr 3.00e-04 | "
                   f"tokens/s 41{rng.randrange(100, 999)} | mem 74.1GiB")
    return out


def culprit_lines(rank: int) -> list[str]:
    tb = [
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 412, in <module>',
        "    main()",
        '  File "/workspace/train.py", line 388, in main',
        "    loss = model(batch).loss",
        f'  File "{_SITE}/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        '  File "/workspace/model.py", line 201, in forward',
        "    attn = torch.softmax(scores, dim=-1)",
        _OOM,
    ]
    return [f"[rank{rank}]: {line}" for line in tb]


def victim_lines(rank: int) -> list[str]:
    pre = f"[rank{rank}]:[E1129 10:12:14.{162555850 + rank:09d} "
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    wd = f"[Rank {rank}] Watchdog caught collective operation timeout: {_WORK} ran for 600081 milliseconds before timing out."
    lines = [
        f"{pre}ProcessGroupNCCL.cpp:632] {wd}",
        f"{pre}ProcessGroupNCCL.cpp:2271] {pg}  failure detected by watchdog at work sequence id: {SEQ} "
        f"PG status: last enqueued work: {SEQ}, last completed work: {SEQ - 1}",
        f"{pre}ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because "
        "FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
        f"{pre}ProcessGroupNCCL.cpp:684] [Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{pre}ProcessGroupNCCL.cpp:698] [Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        f"{pre}ProcessGroupNCCL.cpp:1899] {pg} Process group watchdog thread terminated with exception: {wd}",
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 "
        "(most recent call first):",
        _FRAMES,
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: {wd}",
    ]
    return lines


def rank_log(rank: int) -> str:
    rng = random.Random(rank)
    pid = 20000 + rank % 4000
    lines = _init_lines(rank, pid, rng) + _steps(rank, rng)
    lines += culprit_lines(rank) if rank == CULPRIT else victim_lines(rank)
    return "\n".join(lines) + "\n"


def agent_console(node: int) -> str:
    """Node `node`'s torchrun console: its local ranks aborted (SIGABRT); Root Cause = a victim."""
    first = node * PER_NODE
    ranks = [r for r in range(first, first + PER_NODE) if r != ROOT_CAUSE_VICTIM]
    lines = [
        f"E1129 10:12:16.816000 56204 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6) "
        f"local_rank: 0 (pid: {20000 + first}) of binary: /opt/conda/bin/python3.11",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{_SITE}/torch/distributed/launcher/api.py", line 270, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ]

    def block(r: int) -> list[str]:
        pid = 20000 + r % 4000
        return [f"[{r % PER_NODE}]:", "  time      : 2024-11-29_10:12:16", f"  host      : {host(r)}",
                f"  rank      : {r} (local_rank: {r % PER_NODE})", f"  exitcode  : -6 (pid: {pid})",
                "  error_file: <N/A>", f"  traceback : Signal 6 (SIGABRT) received by PID {pid}"]

    for r in ranks:
        lines += block(r)
    lines += ["------------------------------------------------------------", "Root Cause (first observed failure):"]
    lines += block(ROOT_CAUSE_VICTIM) + ["============================================================"]
    return "\n".join(lines) + "\n"


def generate(root: Path, layout: str = "flat") -> Path:
    """Write the job's logs under root; returns root."""
    root.mkdir(parents=True, exist_ok=True)
    for rank in range(WORLD):
        if layout == "flat":
            path = root / f"rank-{rank}.log"
        else:
            node, local = divmod(rank, PER_NODE)
            path = root / f"node-{node:04d}" / f"{RUN_ID}_a{node:05d}" / "attempt_0" / str(local) / "stderr.log"
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rank_log(rank))
    (root / "torchrun-node0000.log").write_text(agent_console(0))
    return root
