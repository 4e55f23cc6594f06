"""Ranking that respects evidence: symptom priors below evidence, ties by specificity, site signatures scanned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from diagnose.engine import Finding, diagnose_evidence, rank_causes
from diagnose.evidence import LogLine, Provenance
from diagnose.predicates import Binding
from diagnose.rulespec import Outcome, PredicateCall, Rule
from diagnose.scoring import PRIOR_CAP


def _line(sig: str, text: str, rank: int | None = 0, line: int = 1, **fields) -> LogLine:
    return LogLine(signature=sig, rank=rank, text=text, fields=fields,
                   provenance=Provenance(probe="logs", source="run.log", line=line))


def test_told_symptom_prior_ranks_below_weak_off_symptom_evidence() -> None:
    ev = [_line("nccl_error_torch", "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970", rank=0)]
    report = diagnose_evidence(ev, symptom="hang")
    ids = [c.id for c in report.causes]
    assert ids[0] == "nccl_setup", ids
    priors = [c for c in report.causes if c.rules and all(r.startswith("reported-") for r in c.rules)]
    assert priors, ids
    backed = [c for c in report.causes if c not in priors]
    assert report.causes.index(priors[0]) > report.causes.index(backed[-1])
    for c in priors:
        assert c.score <= PRIOR_CAP and c.confidence == "low"
        assert c.summary.startswith("from the runbook's symptom table for --symptom hang")
        assert any(e.text == "--symptom hang" for e in c.evidence)


def test_prior_never_inflates_a_cause_that_evidence_backs() -> None:
    ev = [_line("segfault", "Fatal Python error: Segmentation fault", rank=1)]
    plain = {c.id: c.score for c in diagnose_evidence(ev).causes}
    told = {c.id: c.score for c in diagnose_evidence(ev, symptom="crash").causes}
    assert told["native_crash"] == plain["native_crash"]


def _rule(rid: str, calls: int) -> Rule:
    match = [PredicateCall(predicate="has_signature", params={"names": ["x"]})] * calls
    return Rule(id=rid, title=rid, symptoms=("crash",), requires=("log_line",), match=tuple(match),
                outcomes=(Outcome(cause="placeholder", confidence="high", message="m"),),
                explain={"why": "ten characters at least"}, fix="f", next_steps=("n",))


def test_equal_scores_break_by_specificity_not_by_name() -> None:
    line = _line("x", "the same line")
    generic = _rule("aaa-generic", 1)
    specific = _rule("zzz-specific", 3)
    findings = [
        Finding(generic, Outcome(cause="collective_mismatch", confidence="high", message="generic"),
                {"hit": Binding(frozenset({0}), (line,))}, "generic"),
        Finding(specific, Outcome(cause="version_mismatch", confidence="high", message="specific"),
                {"hit": Binding(frozenset({0}), (line,))}, "specific"),
    ]
    causes = rank_causes(findings, set())
    assert causes[0].score == causes[1].score
    assert [c.id for c in causes] == ["version_mismatch", "collective_mismatch"]


def test_equal_alternatives_keep_the_order_the_rule_lists_them_in() -> None:
    line = _line("x", "the same line")
    rule = _rule("gpu-busy", 1)
    outcome = Outcome(cause="stale_processes", confidence="medium", message="busy",
                      alternatives=("host_config", "hardware_fault"))
    causes = rank_causes([Finding(rule, outcome, {"hit": Binding(frozenset({0}), (line,))}, "busy")], set())
    assert causes[1].score == causes[2].score
    # the alphabet would put hardware_fault first; the rule's author put host_config first
    assert [c.id for c in causes] == ["stale_processes", "host_config", "hardware_fault"]


def test_site_signatures_are_scanned(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "signatures").mkdir(parents=True)
    (site / "crash").mkdir()
    (site / "signatures" / "site.yaml").write_text("""signatures:
  - name: site_scratch_quota
    component: site
    description: the site's scratch filesystem refused a write over quota
    detect: 'SCRATCHFS: quota exceeded for project'
    examples:
      - line: 'SCRATCHFS: quota exceeded for project alpha'
    counter_examples:
      - 'SCRATCHFS: quota ok'
""")
    (site / "crash" / "site-scratch-quota.yaml").write_text("""id: site-scratch-quota
title: Site scratch quota exceeded
symptoms: [crash]
runbook: [H.scaling.occasional-hangs]
requires: [log_line]
match:
- has_signature: {names: [site_scratch_quota]}
  as: hit
outcomes:
- cause: filesystem
  confidence: high
  culprits: hit
  message: 'rank {hit.ranks} hit the scratch quota'
explain: {why: The scratch filesystem refuses writes over the project quota.}
fix: Clean the project's scratch space.
next_steps: [Check the quota.]
""")
    (site / "crash" / "site-scratch-quota.test.yaml").write_text("""rule: site-scratch-quota
cases:
  fires:
    evidence:
    - {kind: log_line, signature: site_scratch_quota, rank: 2, text: 'SCRATCHFS: quota exceeded for project alpha'}
    expect: {fires: filesystem, ranks: [2]}
  near-miss:
    evidence:
    - {kind: log_line, signature: nccl_version, rank: 2, text: 'NCCL version 2.18.3', fields: {version: 2.18.3}}
    expect: quiet
""")
    log = tmp_path / "rank2.log"
    log.write_text("step 10\n[rank2]: SCRATCHFS: quota exceeded for project alpha\n")
    out = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(log), "--json", "--rules", str(site)],
                         capture_output=True, text=True, check=True).stdout
    top = json.loads(out)["causes"][0]
    assert (top["id"], top["ranks"], top["rules"][0]) == ("filesystem", [2], "site-scratch-quota")
    assert top["evidence"][0]["line"] == 2
    ev = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(log), "--evidence", "--rules", str(site)],
                        capture_output=True, text=True, check=True).stdout
    assert any(json.loads(r).get("signature") == "site_scratch_quota" for r in ev.splitlines())
    reports = tmp_path / "reports"
    reports.mkdir()
    for rank in (0, 2):  # hook reports: rank 2 carries the site's line, rank 0 a plain exception
        line = "SCRATCHFS: quota exceeded for project alpha" if rank == 2 else "RuntimeError: peer closed"
        sig = "site_scratch_quota" if rank == 2 else "python_exception"
        ev = [{"kind": "log_line", "signature": sig, "rank": rank, "text": line,
               "provenance": {"probe": "hook", "host": "node1", "pid": 100 + rank}}]
        (reports / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "attempt": 0, "evidence": ev}))
    merged = subprocess.run([sys.executable, "-m", "diagnose", "report", str(reports), "--json", "--rules", str(site)],
                            capture_output=True, text=True, check=True).stdout
    top = json.loads(merged)["causes"][0]
    assert (top["id"], top["ranks"], top["rules"][0]) == ("filesystem", [2], "site-scratch-quota")
    plain = subprocess.run([sys.executable, "-m", "diagnose", "report", str(reports), "--json"],
                           capture_output=True, text=True, check=True).stdout
    assert "site-scratch-quota" not in plain


def test_catalog_family_backs_a_cause_only_where_no_specific_rule_does() -> None:
    specific = _line("ddp_unfinished_reduction", "RuntimeError: Expected to have finished reduction in the prior iteration",
                     rank=2)
    family = _line("ddp_unused_param_indices", "Parameter indices which did not receive grad for rank 2: 7 8", rank=2,
                   line=2)
    alone = {c.id: c for c in diagnose_evidence([specific]).causes}["gradient_sync_error"]
    both = {c.id: c for c in diagnose_evidence([specific, family]).causes}["gradient_sync_error"]
    assert both.score == alone.score and all(not r.startswith("ddp-gradients-not-reduced") for r in both.rules)
    only_family = diagnose_evidence([family]).causes[0]
    assert (only_family.id, only_family.rules, only_family.ranks) == (
        "gradient_sync_error", ["ddp-gradients-not-reduced-as-expected"], [2])


def test_a_refinement_and_its_parent_take_one_place() -> None:
    line = _line("x", "Segmentation fault (core dumped)")
    other = _line("y", "RuntimeError: CUDA error: an illegal memory access was encountered", line=2)
    findings = [
        Finding(_rule("native", 2), Outcome(cause="native_crash", refines="rank_failure", confidence="high",
                                            message="native"), {"hit": Binding(frozenset({0}), (line,))}, "native"),
        Finding(_rule("died", 1), Outcome(cause="rank_failure", confidence="medium", message="died",
                                          alternatives=("version_mismatch",)),
                {"hit": Binding(frozenset({0}), (other,))}, "died"),
    ]
    causes = rank_causes(findings, set())
    assert [c.id for c in causes] == ["native_crash", "version_mismatch"]
    # the parent's line and rule are kept on the entry that took its place
    assert [e.line for e in causes[0].evidence] == [1, 2]
    assert causes[0].rules == ["native", "died"]


def test_a_bare_exception_ranks_below_what_the_report_says() -> None:
    """process-raised-an-exception only restates the crash (a process raised something no rule explains): a
    cause the report's words back (here a container mention) ranks above it, and so do the crash row's causes of the
    runbook's symptom table, which order the causes by how often each is the answer; it is still cited."""
    from diagnose.evidence import Mention

    exc = LogLine(signature="python_exception", rank=None, text="ValueError: size mismatch in the flat parameter",
                  fields={"exc_type": "ValueError", "message": "size mismatch in the flat parameter"},
                  provenance=Provenance(probe="logs", source="error.txt", line=1))
    said = Mention(component="container", words="docker", where="prose",
                   text="It only fails inside the docker image, not on the host.",
                   provenance=Provenance(probe="artifacts", source="report.txt", line=1))
    ids = [c.id for c in diagnose_evidence([exc, said], symptom="crash").causes]
    assert ids.index("host_config") < ids.index("rank_failure"), ids
    alone = diagnose_evidence([exc], symptom="crash").causes
    assert alone[0].id == "framework_bug" and alone[0].summary.startswith("from the runbook"), alone[0]
    restated = next(c for c in alone if c.id == "rank_failure")
    assert restated.rules == ["process-raised-an-exception"] and not restated.summary.startswith("from the runbook")
    assert [e.text for e in restated.evidence] == ["ValueError: size mismatch in the flat parameter"]
    assert alone.index(restated) > max(i for i, c in enumerate(alone) if c.summary.startswith("from the runbook"))


def test_a_bare_exception_with_its_own_frames_stays_above_the_prior() -> None:
    """Where the traceback shows the exception raised in the process's own code (or a data library), not in the
    distributed machinery, the crash of that process is what the log shows: it stays above the symptom table's
    causes; raised inside torch.distributed it restates the crash and ranks below them."""
    def raised(path: str) -> LogLine:
        return LogLine(signature="python_exception", rank=None, text="RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x2 and 6x64)",
                       fields={"exc_type": "RuntimeError", "message": "mat1 and mat2 shapes cannot be multiplied",
                               "frame_path": path, "frame_line": 36},
                       provenance=Provenance(probe="logs", source="error.txt", line=7))
    own = diagnose_evidence([raised("/home/u/projects/MTPSL/model/mapfns.py")], symptom="crash").causes
    assert own[0].id == "rank_failure" and own[0].rules == ["process-raised-an-exception"], own[0]
    inside = diagnose_evidence([raised("/opt/conda/lib/python3.10/site-packages/torch/distributed/fsdp/_runtime_utils.py")],
                               symptom="crash").causes
    assert inside[0].id == "framework_bug" and inside[0].summary.startswith("from the runbook"), inside[0]
    assert "rank_failure" in [c.id for c in inside]


def test_a_catalog_family_ranks_below_a_specific_rule_that_read_its_lines() -> None:
    """The watchdog's abort line that quotes its timeout: the collective-timeout rules read it, so the catalog family
    of aborted communicators (rank_failure) ranks below every cause they name; a family line no rule reads still
    speaks first."""
    aborted = ("RuntimeError: NCCL communicator was aborted on rank 3.  Original reason for failure was: [Rank 3] "
               "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=266392, OpType=ALLGATHER, "
               "Timeout(ms)=1800000) ran for 1803169 milliseconds before timing out.")
    ev = [_line("python_exception", aborted, rank=None, exc_type="RuntimeError"),
          _line("nccl_watchdog_timeout", aborted, rank=3, seq=266392, op="ALLGATHER", timeout_ms=1800000),
          _line("nccl_communicator_aborted", aborted, rank=None),
          _line("c10d_nccl_comm_aborted_v2", aborted, rank=3)]
    report = diagnose_evidence(ev)
    ids = [c.id for c in report.causes]
    assert ids[0] == "checkpoint_barrier" and "rank_failure" in ids[1:], ids
    backed = [c for c in report.causes if "collective-timeout-without-a-dead-rank" in c.rules]
    assert ids.index("rank_failure") > max(ids.index(c.id) for c in backed), ids
    alone = diagnose_evidence([_line("nccl_communicator_aborted", "NCCL communicator was aborted on rank 2.",
                                     rank=2)])
    assert alone.causes[0].id == "rank_failure"
    assert "nccl-communicator-aborted-after-a-failure" in alone.causes[0].rules


def test_a_context_signature_explains_no_exception_line() -> None:
    """gloo's ENFORCE marker is context (the check after it says what failed): the exception on its line is still the
    process's own, read by the generic exception rule; a signature that names the failure takes the line instead."""
    text = ("RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/allreduce.cc:37] context->getPair(recvRank). "
            "missing connection between rank 0 (thisprocess) and rank 0")
    marker = diagnose_evidence([_line("python_exception", text, rank=None, exc_type="RuntimeError"),
                                _line("gloo_enforce_fail", text, rank=None)], symptom="crash").causes
    assert any("process-raised-an-exception" in c.rules for c in marker), [(c.id, c.rules) for c in marker]
    frozen = "AssertionError: DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient."
    named = diagnose_evidence([_line("python_exception", frozen, rank=None, exc_type="AssertionError"),
                               _line("ddp_no_trainable_params", frozen, rank=None)], symptom="crash").causes
    assert named[0].id == "framework_bug" and named[0].rules[0] == "ddp-wraps-a-frozen-module"
    assert not any("process-raised-an-exception" in c.rules for c in named)
