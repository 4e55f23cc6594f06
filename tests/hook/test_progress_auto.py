"""progress="auto": no stall alarm on healthy loops (each a real process), the real stall still reported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

LOOPS = {
    "fast_python": "x = 0\nwhile time.monotonic() < end:\n    x += 1\n",
    "c_calls_0_5s": ("import hashlib\nblob = b'x' * (1 << 20)\nwhile time.monotonic() < end:\n"
                     "    t = time.monotonic()\n    while time.monotonic() - t < 0.5:\n"
                     "        hashlib.sha256(blob * 8).digest()\n"),
    "one_c_call_0_5s": ("import zlib\nblob = bytes(range(256)) * (1 << 16)\n"
                        "n = 1\nwhile time.perf_counter() - time.perf_counter() < 1 and n < 2:\n"
                        "    t0 = time.perf_counter(); zlib.compress(blob * 4, 9); n = 2\n"
                        "per = max(time.perf_counter() - t0, 1e-3)\nreps = max(1, int(0.5 / per))\n"
                        "while time.monotonic() < end:\n    zlib.compress(blob * 4 * reps, 9)\n"),
    "sleep_loop": "while time.monotonic() < end:\n    time.sleep(0.5)\n",
}
STALL = "import threading\nthreading.Event().wait()\n"


def _run(body: str, seconds: float, tmp_path) -> str:
    code = textwrap.dedent(f"""
        import time, diagnose
        diagnose.install(report_dir={str(tmp_path)!r}, watchdog_timeout=1.0, progress="auto", use_engine=False)
        end = time.monotonic() + {seconds}
    """) + body
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=seconds + 30)
    return out.stderr


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_no_false_alarm_on_a_healthy_loop(loop, tmp_path) -> None:
    err = _run(LOOPS[loop], 4.0, tmp_path)
    assert "no progress" not in err, err
    assert not list(tmp_path.glob("rank-*.json"))


def test_real_stall_is_still_reported(tmp_path) -> None:
    code = textwrap.dedent(f"""
        import threading, time, diagnose
        diagnose.install(report_dir={str(tmp_path)!r}, watchdog_timeout=1.0, progress="auto", use_engine=False)
        threading.Timer(4.0, lambda: __import__("os")._exit(0)).start()
    """) + STALL
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert "[diagnose] rank 0: no progress for" in out.stderr, out.stderr
    assert (tmp_path / "rank-0.json").is_file()
