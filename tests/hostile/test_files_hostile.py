"""Files that change under the reader, special files, deep trees and very long lines: read or skipped,
never a crash, a hang or a signal."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.probes.files import open_source, walk
from diagnose.probes.logs.probe import LogProbe, log_signatures
from diagnose.probes.logs.scanner import LONG_LINE, Scanner

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB"
WATCHDOG = ("[rank1]:[E1129 10:12:14.162555850 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600081 milliseconds before timing out.")
FILLER = "node1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"


def _hits(scanner: Scanner, data: bytes, block: int) -> list[tuple[str, int, str]]:
    blocks = [data[i:i + block] for i in range(0, len(data), block)]
    return [(h.signature, h.line_no, h.text) for h in scanner.scan_blocks(blocks)]


def test_block_boundaries_never_change_the_hits():
    rng = random.Random(7)
    lines = [rng.choice([OOM, WATCHDOG, FILLER, "plain text", f"[rank3]: {OOM}", "x" * rng.randint(0, 9000)])
             for _ in range(400)]
    data = "\n".join(lines).encode()
    scanner = Scanner(log_signatures())
    whole = [(h.signature, h.line_no, h.text) for h in scanner.scan_buffer(data).hits]
    assert len(whole) > 100
    for block in (1, 97, 4096, 65536, 1 << 20):
        assert _hits(scanner, data, block) == whole


def test_a_line_longer_than_the_scan_piece_keeps_every_hit():
    """One line of 2.5 pieces with hits at its start, across a piece boundary and at its end."""
    pad = b"y" * (LONG_LINE // 2)
    data = b"".join([b"head\n", OOM.encode(), pad, pad[:-40], WATCHDOG.encode(), pad, pad, b" ", OOM.encode(), b"\nend\n"])
    hits = _hits(Scanner(log_signatures()), data, 8 << 20)
    oom = [h for h in hits if h[0] == "cuda_oom"]
    assert [h[1] for h in oom] == [2]   # one hit per signature and line, the first quoted
    assert any(h[0] == "nccl_watchdog_timeout" and h[1] == 2 and "SeqNum=42" in h[2] for h in hits)
    assert all(len(h[2]) <= 4096 for h in hits)


def test_carriage_return_log_scans_each_redraw(tmp_path):
    """A tqdm log is one `\\n`-line of `\\r` redraws: the error inside one redraw is found, on line 1."""
    bar = "".join(f"\r 40%|####      | {i}/1000 [00:{i % 60:02d}<01:00, 14.78it/s]" for i in range(20000))
    path = tmp_path / "tqdm.log"
    path.write_text(bar + f"\r[rank1]: {OOM}" + bar + "\n")
    report = run_logs([path])
    top = report.causes[0]
    assert top.id == "per_rank_batch_too_large" and top.ranks == [1]
    assert top.evidence[0].line == 1 and top.evidence[0].text.startswith("[rank1]: torch.OutOfMemoryError")


def test_long_single_line_and_split_lines_give_the_same_diagnosis(tmp_path):
    body = [FILLER] * 20000 + [OOM] + [FILLER] * 20000
    (tmp_path / "one").mkdir()
    (tmp_path / "split").mkdir()
    (tmp_path / "one" / "console.log").write_text(" ".join(body) + "\n")
    (tmp_path / "split" / "console.log").write_text("\n".join(body) + "\n")
    one, split = run_logs([tmp_path / "one"]), run_logs([tmp_path / "split"])
    assert [c.id for c in one.causes[:1]] == [c.id for c in split.causes[:1]]
    assert one.causes[0].id == "per_rank_batch_too_large"


def test_file_truncated_while_scanned_does_not_kill_the_process(tmp_path):
    """logrotate's copytruncate: the file shrinks to 0 while it is read (mmap would SIGBUS)."""
    path = tmp_path / "train.log"
    path.write_bytes((f"{FILLER}\n" * 400_000 + f"[rank2]: {OOM}\n").encode())
    source = open_source(path)
    assert not isinstance(source, type(None)) and hasattr(source, "blocks")
    blocks = source.blocks()
    first = next(blocks)
    os.truncate(path, 0)
    rest = b"".join(blocks)
    source.close()
    assert len(first) > 0 and len(first) + len(rest) < 400_000 * (len(FILLER) + 1)
    for _ in range(3):  # and a whole probe run against a writer that truncates it again and again
        path.write_bytes((f"{FILLER}\n" * 100_000 + f"[rank2]: {OOM}\n").encode())
        stop = threading.Event()

        def truncate(stop: threading.Event = stop) -> None:
            while not stop.is_set():
                os.truncate(path, 0)
                time.sleep(0.001)
        writer = threading.Thread(target=truncate)
        writer.start()
        try:
            LogProbe(workers=1).collect([path])
        finally:
            stop.set()
            writer.join()


def test_path_replaced_by_a_fifo_after_the_walk_is_not_opened(tmp_path):
    path = tmp_path / "rank0.log"
    path.write_text(OOM + "\n")
    files, _ = walk([tmp_path])
    assert files == [path]
    path.unlink()
    os.mkfifo(path)  # nobody will ever write to it: opening it for reading without O_NONBLOCK would hang
    result = {}

    def probe() -> None:
        result["r"] = LogProbe(workers=1).collect([tmp_path])
    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the probe hung on a FIFO"
    assert any("special file" in s.reason for s in result["r"].skipped)
    src = open_source(path)
    assert not hasattr(src, "blocks") and "special file" in src.reason


def test_a_fifo_named_like_a_log_is_skipped(tmp_path):
    os.mkfifo(tmp_path / "rank0.log.gz")
    (tmp_path / "ok.log").write_text(f"[rank0]: {OOM}\n")
    report = run_logs([tmp_path])
    assert report.causes[0].id == "per_rank_batch_too_large"
    assert any("special file" in s.reason for s in report.skipped)


def test_a_thousand_nested_folders(tmp_path):
    deep = str(tmp_path)
    try:
        for i in range(1200):  # one level at a time: pathlib's mkdir(parents=True) would recurse
            deep = f"{deep}/d{i % 10}"
            os.mkdir(deep)
    except OSError as exc:  # a path longer than the file system allows
        pytest.skip(f"cannot make a 1,200-deep tree here: {exc}")
    try:
        Path(deep, "rank4.log").write_text(f"{OOM}\n")
        (tmp_path / "loop").symlink_to(tmp_path)
        report = run_logs([tmp_path])
        assert report.causes[0].id == "per_rank_batch_too_large" and report.causes[0].ranks == [4]
        assert any("symlink loop" in s.reason for s in report.skipped)
    finally:  # remove the tree bottom-up: shutil.rmtree (pytest's clean-up) would recurse
        with contextlib.suppress(OSError):
            os.unlink(Path(deep, "rank4.log"))
        while deep != str(tmp_path):
            with contextlib.suppress(OSError):
                os.rmdir(deep)
            deep = os.path.dirname(deep)
