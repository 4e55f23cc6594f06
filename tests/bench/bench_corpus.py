"""Seeded benchmark corpus: 64 rank logs of 8 MB (NCCL_DEBUG=INFO heavy) with 8 planted errors,
and the project's signatures exported as `grep -E` patterns for the baseline.

Shape follows perf-notes.md section 1: ~92% NCCL INFO lines (COLL per-collective lines plus init
bursts), ~6% step lines, benign retried tracebacks, near-miss decoys, planted blocks at known places.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

RANKS = 64
FILE_BYTES = 8 * 2**20
SEED = 20261129


@dataclass(frozen=True)
class Planted:
    kind: str
    rank: int
    at: float  # fraction of the file where the block goes
    needle: str  # a substring the report's evidence must contain
    lines: tuple[str, ...]
    line: int = 0  # 1-based line of the needle, filled in by generate()


_SITE = "/opt/conda/lib/python3.11/site-packages"
PLANTED = (
    Planted("oom", 5, 0.70, "Tried to allocate 2.50 GiB", (
        "[rank5]: Traceback (most recent call last):",
        '[rank5]:   File "/workspace/train.py", line 388, in main',
        "[rank5]:     loss = model(batch).loss",
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 5 has a total "
        "capacity of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.89 GiB "
        "memory in use. Of the allocated memory 74.31 GiB is allocated by PyTorch, and 2.12 GiB is reserved by "
        "PyTorch but unallocated.",
    )),
    Planted("watchdog", 17, 0.90, "WorkNCCL(SeqNum=183021, OpType=ALLREDUCE", (
        "[rank17]:[E1129 10:12:14.162555850 ProcessGroupNCCL.cpp:632] [Rank 17] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=183021, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, "
        "Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
        "[rank17]:[E1129 10:12:14.162814866 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) Rank 17]  "
        "failure detected by watchdog at work sequence id: 183021 PG status: last enqueued work: 183021, "
        "last completed work: 183020",
    )),
    Planted("nccl_ib_warn", 23, 0.50, "Got completion from peer 10.1.4.13<48211> with error 12", (
        "gpu0002:48211:48302 [7] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
        "10.1.4.13<48211> with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid ::ffff:10.1.4.12 "
        "remoteGids::ffff:10.1.4.13 hca mlx5_7",
    )),
    Planted("duplicate_gpu", 31, 0.02, "Duplicate GPU detected", (
        "gpu0003:31877:31877 [3] init.cc:871 NCCL WARN Duplicate GPU detected : rank 31 and rank 27 both on "
        "CUDA device 5d000",
    )),
    Planted("rdzv_timeout", 40, 0.01, "RendezvousTimeoutError", (
        "Traceback (most recent call last):",
        f'  File "{_SITE}/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 1095, in next_rendezvous',
        "    self._op_executor.run(join_op, deadline, self._get_deadline)",
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    )),
    Planted("eaddrinuse", 47, 0.01, "EADDRINUSE", (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
    )),
    Planted("sigkill", 0, 0.999, "exitcode  : -9", (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[3]:",
        "  time      : 2026-11-29_10:12:16",
        "  host      : gpu0000",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : -9 (pid: 40213)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 40213",
        "============================================================",
    )),
    Planted("loss_nan", 58, 0.60, "loss nan", (
        "[rank58]:2026-11-29 10:05:11 | step 151200 | loss nan | lr 3.00e-04 | grad_norm nan | tokens/s 41212",
    )),
)

_DECOYS = (
    "  exitcode  : 0 (pid: 4021)",
    "NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
    "warning: loss scale reduced to 32768.0 (overflow skipped, not an error)",
    "[rank{r}]: retry 1/3 fetching shard s3://bucket/shard-00042.tar: ConnectionResetError handled, retrying",
)


def _init_burst(prefix: str, rank: int, rng: random.Random) -> list[str]:
    out = []
    for comm in range(64):
        cid = rng.getrandbits(48)
        out += [f"{prefix}Bootstrap : Using ib0:10.1.{rank // 8}.{rank % 8 + 10}<0>",
                f"{prefix}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.1.{rank // 8}.{rank % 8 + 10}<0>",
                f"{prefix}Channel {comm % 16:02d}/16 :    0   1   2   3   4   5   6   7",
                f"{prefix}Trees [0] {rank + 1}/-1/-1->{rank}->{rank - 1} [1] {rank + 1}/-1/-1->{rank}->{rank - 1}",
                f"{prefix}Channel {comm % 16:02d}/0 : {rank}[{rank % 8}] -> {(rank + 1) % 64}[{(rank + 1) % 8}] via P2P/IPC",
                f"{prefix}Channel {comm % 16:02d}/0 : {rank}[{rank % 8}] -> {(rank + 8) % 64}[{rank % 8}] [send] via NET/IB/1/GDRDMA",
                f"{prefix}comm 0x{cid:x} rank {rank} nranks 64 cudaDev {rank % 8} nvmlDev {rank % 8} busId "
                f"{0x18000 + (rank % 8) * 0x11000:x} commId 0x{cid ^ 0x5a5a:x} - Init COMPLETE"]
    return out


def rank_file(rank: int, size: int = FILE_BYTES) -> tuple[str, list[Planted]]:
    """The text of one rank's log, and its planted blocks with their line numbers."""
    rng = random.Random(SEED + rank)
    prefix = f"gpu{rank // 8:04d}:{40000 + rank}:{40100 + rank} [{rank % 8}] NCCL INFO "
    lines = _init_burst(prefix, rank, rng)
    pending = sorted((p for p in PLANTED if p.rank == rank), key=lambda p: p.at)
    placed: list[Planted] = []
    nbytes = sum(len(x) + 1 for x in lines)
    step, op = 150000, 0x1a2b00
    while nbytes < size:
        if pending and nbytes >= pending[0].at * size:
            p = pending.pop(0)
            idx = next(i for i, t in enumerate(p.lines) if p.needle in t)
            placed.append(Planted(**{**asdict(p), "lines": p.lines, "line": len(lines) + idx + 1}))
            lines += p.lines
            nbytes += sum(len(x) + 1 for x in p.lines)
        chunk = []
        for _ in range(16):
            op += 1
            chunk.append(f"{prefix}AllReduce: opCount {op:x} sendbuff 0x7f3a{rng.getrandbits(24):06x} recvbuff "
                         f"0x7f3a{rng.getrandbits(24):06x} count {rng.choice((262144, 1048576, 4194304))} datatype 7 "
                         f"op 0 root 0 comm 0x55d2c41f0e70 [nranks=64] stream 0x55d2c3e8a1b0")
        step += 1
        chunk.append(f"[rank{rank}]:2026-11-29 10:{step // 60 % 60:02d}:{step % 60:02d} | step {step} | loss "
                     f"{2.4 - step * 1e-6 + rng.random() * 0.01:.4f} | lr 3.00e-04 | tokens/s {rng.randrange(40000, 42000)}")
        if step % 997 == 0:
            chunk.append(_DECOYS[step % len(_DECOYS)].format(r=rank))
        lines += chunk
        nbytes += sum(len(x) + 1 for x in chunk)
    return "\n".join(lines) + "\n", placed


def generate(root: Path, ranks: int = RANKS, size: int = FILE_BYTES) -> list[Planted]:
    """Write rank-R.log for every rank and planted.json; return the planted blocks."""
    root.mkdir(parents=True, exist_ok=True)
    planted: list[Planted] = []
    for rank in range(ranks):
        text, placed = rank_file(rank, size)
        (root / f"rank-{rank}.log").write_text(text)
        planted += placed
    (root.parent / f"{root.name}.planted.json").write_text(json.dumps([asdict(p) for p in planted], indent=1))
    return planted


# --- signatures as grep -E patterns --------------------------------------------------------

_CLASS_IN = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"}


def _bracket(body: str, caseless: bool) -> str:
    neg = body.startswith("^")
    body = body[1:] if neg else body
    for k, v in _CLASS_IN.items():
        body = body.replace("\\" + k, v)
    body = body.replace("\\.", ".").replace("\\-", "-").replace("\\[", "[").replace("\\]", "")
    if caseless:
        body += "".join(c.swapcase() for c in re.sub(r"\[:[a-z]+:\]", "", body) if c.isalpha())
    return "[" + ("^" if neg else "") + body + "]"


def to_ere(expr: str, caseless: bool = False) -> str:
    """Translate a Hyperscan/PCRE detect expression into GNU grep -E syntax."""
    out, i = [], 0
    while i < len(expr):
        c = expr[i]
        if expr.startswith("(?:", i):
            out.append("(")
            i += 3
        elif expr.startswith("(?i)", i):
            caseless, i = True, i + 4
        elif c == "\\" and i + 1 < len(expr):
            nxt = expr[i + 1]
            out.append({"d": "[0-9]", "D": "[^0-9]"}.get(nxt, c + nxt))
            i += 2
        elif c == "[":
            j = expr.index("]", i + 2 if expr[i + 1:i + 2] in ("]", "^") else i + 1)
            while expr[j - 1] == "\\":
                j = expr.index("]", j + 1)
            out.append(_bracket(expr[i + 1:j], caseless))
            i = j + 1
        elif caseless and c.isalpha():
            out.append(f"[{c.lower()}{c.upper()}]")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def project_patterns() -> list[tuple[str, str, bool]]:
    """(name, detect, caseless) of every signature the project scans with."""
    from diagnose.probes.logs.scanner import signature_expressions
    from diagnose.probes.logs.signatures import load_signatures

    return [(s.name, s.detect, s.caseless) for s in signature_expressions(load_signatures())]


_WIDE_BOUND = re.compile(r"(?<!\\)\{(\d+),(\d{3,})\}")
GREP_BOUND_MAX = 255


def widen_bounds(ere: str) -> str:
    """``ere`` with each bounded repeat over GREP_BOUND_MAX made unbounded (``{0,2000}`` -> ``*``): GNU grep's
    DFA grows with the bound (1,320 patterns, three of them with ``{0,2000}``: 35 s for 16 MB instead of
    2.9 s). The pattern then matches a superset (the same lines where lines are shorter than the bound, as in
    the corpus), so grep only gets faster: the baseline stays conservative."""
    def repl(m: re.Match[str]) -> str:
        lo, hi = int(m[1]), int(m[2])
        if hi <= GREP_BOUND_MAX:
            return m[0]
        return "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
    return _WIDE_BOUND.sub(repl, ere)


def grep_patterns(path: Path, only: list[str] | None = None) -> tuple[int, list[str]]:
    """Write the project's signatures (or those named in `only`) as grep -E patterns to path (long bounds
    widened, see widen_bounds); returns (count, names grep rejected)."""
    good, rejected = [], []
    for name, detect, caseless in project_patterns():
        if only is not None and name not in only:
            continue
        ere = widen_bounds(to_ere(detect, caseless))
        ok = False
        try:
            re.compile(detect)
            ok = subprocess.run(["grep", "-E", "-e", ere, "/dev/null"], capture_output=True).returncode == 1
        except (re.error, ValueError):
            ok = False
        (good.append(ere) if ok else rejected.append(name))
    path.write_text("\n".join(good) + "\n")
    return len(good), rejected
