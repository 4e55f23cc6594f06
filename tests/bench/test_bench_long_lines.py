"""Long lines cost what their bytes cost (issue 14): `diagnose logs` on one 200 MB line, and on a 24 MB
log whose redraws are separated only by `\\r` (tqdm), against the same bytes split into ordinary lines.

Runs only with DIAGNOSE_BENCH=1; prints the ratios and asserts the bar (each within 3x). The test
suite's own long-line tests (tests/hostile) assert correctness, not time."""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("DIAGNOSE_BENCH") != "1", reason="benchmark: set DIAGNOSE_BENCH=1")]
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB"
BAR = 3.0


def _lines(total: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out, size = [], 0
    while size < total:
        i = len(out)
        line = rng.choice([
            f"gpu0001:4821:4902 [{i % 8}] NCCL INFO Channel {i % 32:02d}/0 : {i % 8}[{i % 8}] -> {(i + 1) % 8}[0] via P2P/IPC",
            f"[rank{i % 8}]: step {i} loss: {rng.random():.4f} lr: 3.0e-04 step_time: {rng.random():.4f}",
            f"gpu0001:4821:4902 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x7f00 count 262144 datatype 7 op 0",
        ])
        out.append(line)
        size += len(line) + 1
    out.insert(len(out) * 9 // 10, OOM)
    return out


def _tqdm(total: int) -> list[str]:
    out, size, i = [], 0, 0
    while size < total:
        line = f"Epoch 0: {i % 100:3d}%|#####     | {i}/100000 [01:{i % 60:02d}<10:00, 14.78it/s, loss=0.123]"
        out.append(line)
        size += len(line) + 1
        i += 1
    out.insert(len(out) * 9 // 10, OOM)
    return out


def _time(path: Path, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(path), "--json"], capture_output=True,
                              text=True, timeout=900)
        times.append(time.perf_counter() - t)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(proc.stdout)["causes"][0]["id"] == "per_rank_batch_too_large"
    return statistics.median(times)


@pytest.mark.parametrize(("shape", "size", "sep"), [("one-200MB-line", 200 << 20, " "), ("tqdm-24MB-cr", 24 << 20, "\r")])
def test_long_lines_within_3x_of_split_lines(shape, size, sep, tmp_path):
    lines = _lines(size, 1) if sep == " " else _tqdm(size)
    joined, split = tmp_path / f"{shape}.log", tmp_path / f"{shape}-split.log"
    joined.write_text(sep.join(lines) + "\n")
    split.write_text("\n".join(lines) + "\n")
    assert joined.stat().st_size == split.stat().st_size
    rounds = int(os.environ.get("DIAGNOSE_BENCH_ROUNDS", "3"))
    t_joined, t_split = _time(joined, rounds), _time(split, rounds)
    ratio = t_joined / t_split
    print(json.dumps({"shape": shape, "mb": size >> 20, "joined_s": round(t_joined, 2), "split_s": round(t_split, 2),
                      "ratio": round(ratio, 2)}))
    assert ratio <= BAR, f"{shape}: {t_joined:.1f} s against {t_split:.1f} s split into lines ({ratio:.1f}x)"
