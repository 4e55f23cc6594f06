"""No signature backtracks catastrophically on the Python fallback path: every signature's detect (the
fallback scan over a whole 100 KB line) and detect + extract (on a hit window) run on adversarial lines
within a budget measured against a trivial pattern in the same run (the loader already refuses
unbounded opening repeats, see ``regex_lint``). A future signature with nested
or overlapping quantifiers (``\\d+/\\d+`` on a run of digits, ``.*X$`` on a repeated example) fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("regex_budget_child.py")
FACTOR = 5000       # a linear pattern costs at most ~2,000x the trivial one here; quadratic ones 100,000x+
FLOOR_S = 1.0
TOTAL_S = 600  # 1,037 signatures x 10 adversarial 50 KB lines on the slow path: about a minute
SIZE = "50000"  # quadratic patterns cost 50,000x a linear one here; openings are also checked statically


@pytest.mark.slow
def test_every_signature_within_budget_on_adversarial_lines():
    try:
        proc = subprocess.run([sys.executable, str(CHILD), SIZE], capture_output=True, text=True,
                              timeout=TOTAL_S)
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        last = [ln for ln in out.splitlines() if ln.startswith("START ")][-1:]
        pytest.fail(f"the budget run did not finish in {TOTAL_S} s; running when stopped: {last}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = out.splitlines()
    baseline = float(lines[0].split()[1])
    budget = max(FACTOR * baseline, FLOOR_S)
    worst = {ln.split()[1]: float(ln.split()[2]) for ln in lines if ln.startswith("DONE ")}
    assert len(worst) > 100
    slow = {name: round(t, 2) for name, t in worst.items() if t > budget}
    assert not slow, f"signatures over {budget:.2f} s ({FACTOR}x a trivial pattern) on adversarial lines: {slow}"
