"""Hostile and odd inputs are read or skipped with a reason: never a crash, never a hang."""

import gzip
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.commands.logs import collect_logs, run_logs
from diagnose.probes.logs.probe import log_signatures, scan_text
from diagnose.probes.logs.scanner import Scanner

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.10 GiB"
REAL_LINES = [OOM, "[rank3]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error",
              "  exitcode  : -9 (pid: 14750)", "  rank      : 1 (local_rank: 1)", "Root Cause (first observed failure):",
              "node1:1:2 [0] NCCL INFO NET/Socket : Using eth0", "[rank0]: Traceback (most recent call last):"]


def test_sparse_10gb_file_is_skipped_quickly(tmp_path):
    big = tmp_path / "huge.log"
    with big.open("wb") as fh:
        fh.truncate(10 << 30)
    (tmp_path / "ok.log").write_text(OOM + "\n")
    report = run_logs([tmp_path])
    assert {Path(s.source).name: s.reason for s in report.skipped}["huge.log"] == "binary file"
    assert report.causes[0].id == "per_rank_batch_too_large"


def test_one_150mb_line_is_scanned(tmp_path):
    path = tmp_path / "oneline.log"
    with path.open("w") as fh:
        fh.write("x" * (150 << 20))
        fh.write(" " + OOM + "\n")
    report = run_logs([path])
    assert report.causes and report.causes[0].id == "per_rank_batch_too_large"
    assert len(report.causes[0].evidence[0].text) <= 4096


def test_compressed_and_truncated_logs(tmp_path):
    (tmp_path / "a.log.gz").write_bytes(gzip.compress((OOM + "\n").encode()))
    whole = gzip.compress(os.urandom(100_000).hex().encode())
    (tmp_path / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    import zstandard

    (tmp_path / "b.log.zst").write_bytes(zstandard.ZstdCompressor().compress(b"[rank1]: " + OOM.encode() + b"\n"))
    report = run_logs([tmp_path])
    cause = report.causes[0]
    assert cause.id == "per_rank_batch_too_large" and 1 in cause.ranks
    assert any("cut.log.gz" in n and "truncated or corrupt" in n for n in report.notes)


def test_unreadable_file_is_skipped(tmp_path):
    path = tmp_path / "secret.log"
    path.write_text(OOM)
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads everything: nothing to test here
        return
    report = run_logs([tmp_path])
    assert any("permission" in s.reason for s in report.skipped)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(REAL_LINES), st.text(max_size=200)), max_size=30),
       st.integers(min_value=0, max_value=400), st.binary(max_size=40))
def test_random_and_mutated_logs_never_break_the_scanner(lines, cut, junk):
    text = "\n".join(lines)
    mutated = text[:cut] + junk.decode("latin-1") + text[cut:]
    for candidate in (text, mutated, mutated[: len(mutated) // 2]):
        for hit in scan_text(candidate):
            assert hit.signature in log_signatures().by_name
        data = candidate.encode("utf-8", "surrogatepass")
        hs = Scanner(log_signatures()).scan_buffer(data)
        fallback = Scanner(log_signatures(), engine="re").scan_buffer(data)
        assert {(h.signature, h.line_no) for h in hs.hits} == {(h.signature, h.line_no) for h in fallback.hits}


def test_one_100mb_line_of_progress_fragments(tmp_path):
    """A single 100 MB line of trainer progress fragments: the step-time parser leaves a file over its limit to
    `diagnose scaling` with a note, and one of just under its limit is read at the line's first 4 KiB."""
    unit = "Epoch [1][50/1000]\tlr: 1.000e-02, time: 0.743, data_time: 0.512, loss: 1.2 | wps 1 | ups 1 | 3.42G 1.2 "
    big = tmp_path / "big.log"
    with big.open("w") as fh:
        fh.write(unit * ((100 << 20) // len(unit)) + "\n")
    report = run_logs([big])
    assert any("step-time lines not parsed" in n for n in report.notes)
    small = tmp_path / "small.log"
    small.write_text(unit * ((3 << 20) // len(unit)) + "\n")
    evidence, _, _ = collect_logs([small])
    steps = [e for e in evidence if e.kind == "step_metric"]
    assert len(steps) == 1 and len(steps[0].text) <= 500 and steps[0].step_time == 0.743
