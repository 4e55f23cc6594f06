"""Real torch (gloo, CPU) jobs that fail in the ways of lab-notes section 2; `diagnose logs` on their logs.

Variants: `logdir` = torchrun --log-dir D --redirects 3 --tee 3 (per-rank files, error.json, console),
`console` = only torchrun's combined console output, `ranklogs` = a hand launch with one file per rank.
"""

from __future__ import annotations

import re

import pytest
from e2e_cases import CASES, split_case
from e2e_harness import check_expect, diagnose_json, summarize

pytestmark = [pytest.mark.torch, pytest.mark.slow]


@pytest.mark.parametrize("case", CASES)
def test_run_leaves_lab_evidence(case: str, e2e_runs) -> None:
    """The harness reproduces the failure: the exact lab-notes texts are in the saved logs."""
    sc, variant = split_case(case)
    run = e2e_runs.get(case)
    assert not run.timed_out, f"{case} ran past the wall limit ({run.wall_s:.1f}s); logs in {run.folder}"
    assert run.returncode not in (0, None), f"{case} did not fail (rc={run.returncode}); logs in {run.folder}"
    text = run.all_text()
    missing = [rx for rx in sc.evidence if not re.search(rx, text)]
    assert not missing, f"{case}: evidence not found {missing}; logs in {run.folder}"
    if variant == "logdir":
        assert list(run.folder.glob("torchrun-logs/*/attempt_0/1/stderr.log")), "no per-rank log files"
    if sc.name == "d2":
        assert list(run.folder.rglob("error.json")), "@record left no error.json"


@pytest.mark.parametrize("case", CASES)
def test_diagnose_names_cause_and_culprit(case: str, e2e_runs) -> None:
    sc, _ = split_case(case)
    run = e2e_runs.get(case)
    report = diagnose_json(run.folder)
    print(f"{case}: {summarize(report)} (logs: {run.folder})")
    check_expect(report, sc.expect)
