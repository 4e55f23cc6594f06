"""The text report: the answer first, what the JSON knows, nothing twice, plain when piped, fitted on a TTY."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "oom-killed-rank"
BOX = set("╭╮╰╯│─█▓▒░")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})})


def on_tty(*args: str, env: dict[str, str] | None = None, columns: int = 100) -> str:
    """Run the CLI with stdout on a real pseudo-terminal; what it wrote."""
    main, child = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", *args], stdout=child, stderr=subprocess.PIPE,
                            env={**os.environ, "COLUMNS": str(columns), **(env or {})})
    os.close(child)
    out = b""
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(main)
    return out.decode("utf-8", "replace")


def test_piped_output_is_plain_lines_with_the_answer_first():
    proc = cli("logs", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("rank 2: rank_failure (SIGKILL) [high, 0.85]: rank 2 ended with SIGKILL")
    assert not BOX & set(proc.stdout) and "\x1b[" not in proc.stdout
    sigkill = next(line for line in lines if "Signal 9 (SIGKILL) received by PID 2103" in line)
    assert "console.log:16" in sigkill  # one evidence line stays one line (no wrapping)
    assert "  2 rank(s) 1,3: all_reduce #4120 timed_out" in proc.stdout
    for bad in ("rank(s) none", " None", "#?", "barrier barrier"):
        assert bad not in proc.stdout
    assert proc.stdout.count("dmesg -T") == 1 and proc.stdout.count("to collect next time") == 1
    # the alternative does not repeat the top cause's summary and evidence
    alt = next(line for line in lines if line.startswith("2. host_memory"))
    assert "ended with SIGKILL" not in alt and proc.stdout.count("Signal 9 (SIGKILL) received") == 1


def test_terminal_output_has_fitted_panels_and_indented_continuations():
    out = on_tty("logs", str(EXAMPLE), "--color", "never", columns=100)
    rows = out.replace("\r", "").splitlines()
    assert rows[0].startswith("rank 2: rank_failure (SIGKILL)")
    panel = [r for r in rows if r.startswith(("╭", "│", "╰"))]
    assert panel, out
    assert all(len(r) <= 100 for r in panel)
    inside = [r[1:-1].rstrip() for r in panel if r.startswith("│")]
    evidence = [i for i, r in enumerate(inside) if "console.log:1 " in r][0]
    assert inside[evidence + 1].startswith("     "), inside[evidence:evidence + 2]  # continuation indented
    assert not inside[evidence].rstrip().endswith(("Watchdo", "collec")), "cut inside a word"
    assert "\x1b[3" not in out  # --color never


def test_color_always_colours_a_pipe_and_no_color_is_respected():
    assert "\x1b[" in cli("logs", str(EXAMPLE), "--color", "always").stdout
    assert "\x1b[1;31m" not in on_tty("logs", str(EXAMPLE), env={"NO_COLOR": "1"})


def test_dangerous_pickle_global_is_the_first_line(tmp_path):
    class Planted:
        def __reduce__(self):
            return os.system, ("true",)

    path = tmp_path / "evil.pt"
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "extra": Planted()}, path)
    proc = cli("checkpoint", str(path))
    first = proc.stdout.splitlines()[0]
    assert first.startswith("DANGER") and "posix.system" in first and "evil.pt" in first


def test_scaling_terms_table_is_shown(tmp_path):
    runs = {"runs": [
        {"run": "1gpu", "world_size": 1, "local_batch": 32, "step_time": 0.100, "data_time": 0.010,
         "comm_time": 0.0, "compute_time": 0.090},
        {"run": "8gpu", "world_size": 8, "local_batch": 32, "step_time": 0.250, "data_time": 0.010,
         "comm_time": 0.150, "compute_time": 0.090}]}
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    proc = cli("scaling", str(tmp_path / "runs.json"))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "step-time terms (ms per step)" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("8gpu"))
    assert "250.0" in row and "150.0" in row


def test_live_hang_stack_in_py_spy_layout_and_no_first_failure():
    from diagnose.engine import diagnose_evidence
    from diagnose.evidence import Provenance, StackSample
    from diagnose.output.text import render_plain

    frames = ("barrier (torch/distributed/distributed_c10d.py:4159)", "save_checkpoint (train.py:88)",
              "main (train.py:120)")
    ev = []
    for sample in (0, 1):
        ev.append(StackSample(rank=0, activity="checkpoint_io", frames=("write (torch/serialization.py:650)",
                                                                       "save (train.py:40)", "main (train.py:120)"),
                              sample=sample, thread="MainThread",
                              provenance=Provenance(probe="live", source="py-spy", pid=4242)))
        for r in (1, 2, 3):
            ev.append(StackSample(rank=r, activity="barrier", op="barrier", frames=frames, sample=sample,
                                  provenance=Provenance(probe="live", source="py-spy", pid=4300 + r)))
    report = diagnose_evidence(ev, command="hang")
    text = render_plain(report)
    assert report.causes and report.causes[0].ranks == [0], text
    assert 'Thread (rank 0, pid 4242): "MainThread"\n    write (torch/serialization.py:650)\n    save (train.py:40)' in text
    assert "first failure" not in text and "barrier barrier" not in text


class _Terminal:
    """A text stream that says it is a terminal (what rich's live display needs to draw)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_progress_shows_only_after_a_second_and_only_on_a_terminal():
    import io
    import time

    from diagnose.output.progress import progress

    term = _Terminal()
    with progress("logs", stream=term):
        time.sleep(0.2)
    assert "".join(term.parts) == ""  # fast runs draw nothing
    term = _Terminal()
    with progress("logs", stream=term, delay=0.3):
        time.sleep(1.2)
    assert "diagnose logs: reading and diagnosing" in "".join(term.parts)
    pipe = io.StringIO()
    with progress("logs", stream=pipe, delay=0.0):
        time.sleep(0.3)
    assert pipe.getvalue() == ""


def test_progress_bar_counts_the_bytes_probes_report():
    import time

    from diagnose.output.progress import progress
    from diagnose.probes import progress as probe_progress

    term = _Terminal()
    with progress("logs", stream=term, delay=0.0):
        probe_progress.begin(64 << 20)
        probe_progress.advance(32 << 20)
        time.sleep(0.5)
    drawn = "".join(term.parts)
    assert "33.6/67.1 MB" in drawn, drawn[-400:]
    probe_progress.advance(1)  # nobody listens any more: a no-op


@pytest.mark.slow
def test_logs_on_a_terminal_draws_a_byte_bar_on_stderr_only(tmp_path):
    """The real command under a pseudo-terminal: stderr shows the bar, stdout stays the plain report."""
    import contextlib
    import threading

    log = tmp_path / "rank0.log"
    line = b"2024-05-01 10:00:00 INFO train step 100 loss 2.345 lr 1e-4 tokens 4096 throughput 1234.5\n"
    with open(log, "wb") as fh:
        for _ in range(24):
            fh.write(line * ((4 << 20) // len(line)))
        fh.write(b"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    leader, follower = pty.openpty()
    drawn = bytearray()

    def drain() -> None:  # keep the terminal readable, or the child blocks writing to it
        with contextlib.suppress(OSError):
            while chunk := os.read(leader, 1 << 16):
                drawn.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run([sys.executable, "-m", "diagnose.cli", "logs", str(log), "--json"], stdout=subprocess.PIPE,
                          stderr=follower, env=dict(os.environ, COLUMNS="120", DIAGNOSE_PROGRESS_DELAY="0"),
                          timeout=300)
    os.close(follower)
    reader.join(timeout=5)
    os.close(leader)
    assert proc.returncode == 0
    assert b"diagnose logs: reading and diagnosing" in drawn and b"MB" in drawn, drawn[-400:]
    assert b"\x1b" not in proc.stdout and proc.stdout.lstrip().startswith(b"{")
