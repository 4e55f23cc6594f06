"""Real torchrun gloo jobs with the hook installed: a crash, a host OOM and a hang on rank 1."""

from __future__ import annotations

import pytest

from diagnose.commands.report import collect_reports, run_report

from .conftest import normalize, rules_present, run_job

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def _by_kind(report: dict, kind: str, **match: object) -> list[dict]:
    return [e for e in report["evidence"] if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def _rank_lines(output: str, rank: int) -> list[str]:
    return [line for line in normalize(output).splitlines() if line.startswith(f"[rank{rank}]:")]


def _top_cause(directory) -> tuple[str, list[int]]:
    report = run_report(directory)
    assert report.command == "report"
    assert report.causes, report.notes
    return report.causes[0].id, report.causes[0].ranks


def test_crash_on_rank1(tmp_path):
    run = run_job(tmp_path / "hook", "crash")
    plain = run_job(tmp_path / "plain", "crash", hook=False)
    assert run.returncode == plain.returncode == 1
    # the exception reaches the console exactly as without the hook (only [diagnose] lines added)
    assert _rank_lines(run.output, 1) == _rank_lines(plain.output, 1)
    assert "ValueError: simulated bad batch on rank 1 at step 3" in "\n".join(_rank_lines(run.output, 1))
    assert "[rank1]: [diagnose] rank 1: ValueError: simulated bad batch on rank 1 at step 3" in run.output
    report = run.report(1)
    assert report["rank"] == 1 and report["attempt"] == 0 and report["schema"] == "diagnose.report/1"
    (raised,) = _by_kind(report, "log_line", signature="hook_exception", text="ValueError: simulated bad batch on rank 1 at step 3")
    assert raised["fields"]["uncaught"] is True
    assert "KeyError: 'batch'" in raised["fields"]["traceback"]
    assert _by_kind(report, "log_line", signature="hook_exception", text="KeyError: 'batch'")[0]["fields"]["relation"] == "cause"
    (exit_,) = _by_kind(report, "rank_exit")
    assert exit_["exitcode"] == 1 and exit_["rank"] == 1
    (sample,) = _by_kind(report, "stack_sample")
    assert sample["activity"] == "user_code" and sample["call_site"].endswith("hook_job.py:50")
    (env,) = _by_kind(report, "rank_env")
    assert env["variables"]["dist.world_size"] == "2" and env["variables"]["dist.backend"] == "gloo"
    evidence, _, _ = collect_reports(run.report_dir)
    ranks_with_report = {p.name for p in run.report_dir.iterdir()}
    if "rank-0.json" not in ranks_with_report:  # rank 0 was SIGTERMed before it could write
        assert any(e.kind == "rank_status" and e.status == "no_evidence" and e.rank == 0 for e in evidence)
    if rules_present():
        assert _top_cause(run.report_dir) == ("rank_failure", [1])
        merged = run_report(run.report_dir)
        every = [(c.id, c.summary) for c in merged.causes]
        assert not [x for x in every if x[0] in ("launcher_misconfig", "rendezvous_misconfig")
                    or "never started" in x[1]], every  # rank 0 got past init: it did not fail, it started
        assert any("wrote no report" in n and "did not fail" in n for n in merged.notes), merged.notes


def test_host_oom_on_rank1(tmp_path):
    run = run_job(tmp_path / "hook", "oom")
    plain = run_job(tmp_path / "plain", "oom", hook=False)
    assert run.returncode == plain.returncode == 1
    assert _rank_lines(run.output, 1) == _rank_lines(plain.output, 1)
    report = run.report(1)
    (raised,) = _by_kind(report, "log_line", signature="hook_exception", rank=1)
    assert "can't allocate memory: you tried to allocate 536870912 bytes" in raised["text"]
    (memory,) = _by_kind(report, "memory_state", device="host")
    assert memory["requested_bytes"] == 512 * 2**20
    assert memory["text"].startswith("address space")
    assert memory["used_bytes"] + memory["requested_bytes"] > memory["total_bytes"]
    if rules_present():
        assert _top_cause(run.report_dir) == ("host_memory", [1])


def test_hang_rank1_skips_collective(tmp_path):
    run = run_job(tmp_path, "hang", WATCHDOG="1.5", PG_TIMEOUT="6")
    assert run.returncode == 1  # rank 0's collective timed out; the watchdog killed nothing
    assert "[diagnose] rank 0: no progress for" in run.output
    r0, r1 = run.report(0), run.report(1)
    stalls0 = _by_kind(r0, "stack_sample", activity="collective", op="all_reduce")
    assert {s["sample"] for s in stalls0} >= {0, 1}
    assert "futex" in stalls0[0]["text"]  # the kernel wait channel of a blocked collective
    (sleep0, sleep1) = _by_kind(r1, "stack_sample", activity="sleeping")
    assert sleep0["call_site"].endswith("hook_job.py:54")
    fr0 = _by_kind(r0, "collective_state")
    fr1 = _by_kind(r1, "collective_state")
    assert fr0 and fr1
    assert max(s["last_enqueued"] for s in fr0) == max(s["last_enqueued"] for s in fr1) + 1
    assert any(s["state"] in ("scheduled", "timed_out") and s["op"] == "all_reduce" for s in fr0)
    assert _by_kind(r0, "rank_exit")[0]["message"].startswith("RuntimeError:")
    if rules_present():
        assert _top_cause(run.report_dir) == ("collective_mismatch", [1])


def test_healthy_job_unchanged(tmp_path):
    run = run_job(tmp_path / "hook", "ok", WATCHDOG="30")
    plain = run_job(tmp_path / "plain", "ok", hook=False)
    assert run.returncode == plain.returncode == 0
    assert "[diagnose]" not in run.output
    assert not run.report_dir.exists()
    for output in (run.output, plain.output):  # ranks may interleave within one console line
        assert output.count("rank 0: done, sum 32") == output.count("rank 1: done, sum 32") == 1
