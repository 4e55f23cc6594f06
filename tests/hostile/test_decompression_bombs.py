"""Compressed bombs: a folder of gzip, bzip2 and xz files that each inflate to 4 GiB is read as a stream
under one cap per file, with every worker's memory bounded together, and the diagnosis is the one the
same text gives uncompressed.

The cap is lowered to 16 MiB for the run (``DIAGNOSE_MAX_DECOMPRESSED_MB``) so the test reads 48 MiB,
not 6 GiB; what is measured is that memory does not follow the inflated size."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.hostile.hostile_util import AS_LIMIT, _limit

OOM = ("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
       "capacity of 79.15 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 77.9 GiB "
       "memory in use. Of the allocated memory 75.1 GiB is allocated by PyTorch, and 1.2 GiB is reserved by "
       "PyTorch but unallocated.\n")
FILLER = b"2024-05-01 10:00:00 INFO train step 100 loss 2.345 lr 1e-4 tokens 4096 throughput 1234.5\n"
MEMBER = 4 << 20
INFLATED = 4 << 30
CAP_MB = 16
PEAK_LIMIT = 1 << 30


def _bomb(path: Path, compress) -> None:  # noqa: ANN001
    """Concatenated members (every format reads them as one stream): the first names the failure."""
    filler = FILLER * (MEMBER // len(FILLER))
    first, rest = compress(OOM.encode() + filler), compress(filler)
    with open(path, "wb") as fh:
        fh.write(first)
        for _ in range(INFLATED // MEMBER - 1):
            fh.write(rest)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bombs")
    _bomb(root / "rank0.log.gz", lambda b: gzip.compress(b, 9))
    _bomb(root / "rank1.log.bz2", lambda b: bz2.compress(b, 9))
    _bomb(root / "rank2.log.xz", lambda b: lzma.compress(b, preset=6))
    return root


def _run_watched(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """The CLI under the address-space limit; the peak RSS of its whole process tree, sampled every 20 ms."""
    env = dict(os.environ, DIAGNOSE_MAX_DECOMPRESSED_MB=str(CAP_MB))
    proc = subprocess.Popen([sys.executable, "-m", "diagnose.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_limit)
    top, peak = psutil.Process(proc.pid), 0
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            tree = [top, *top.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), peak


@pytest.mark.slow
def test_a_folder_of_bombs_is_read_under_one_cap_with_bounded_memory(bombs: Path, tmp_path: Path) -> None:
    assert sum(p.stat().st_size for p in bombs.iterdir()) < 200 << 20 < INFLATED  # the ratio is the bomb's
    done, peak = _run_watched("logs", str(bombs), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert f"3 files (e.g. {bombs / 'rank0.log.gz'}): decompressed text cut at {CAP_MB} MiB" in report["notes"]
    assert peak < PEAK_LIMIT < AS_LIMIT, f"peak RSS of the process tree {peak >> 20} MiB"

    plain = tmp_path / "rank0.log"
    plain.write_text(OOM + FILLER.decode() * 1000)
    expected = json.loads(_run_watched("logs", str(plain), "--json")[0].stdout)
    assert expected["causes"], "the uncompressed text names a cause"
    top = report["causes"][0]
    assert (top["id"], top["ranks"]) == (expected["causes"][0]["id"], expected["causes"][0]["ranks"])
    assert any("CUDA out of memory" in e["text"] for e in top["evidence"])
