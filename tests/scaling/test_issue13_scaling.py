"""Issue 13, `diagnose scaling`: per-rank files are one run, every rank-prefix style is read,
eta is T1/(N*TN), the step-time terms are printed, and a straggler is found whatever the prefix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.commands.scaling import collect_scaling_evidence, render_scaling_table, run_scaling
from diagnose.evidence import Provenance, StepMetric
from diagnose.probes.steptime.probe import parse_step_lines

PREFIXES = {
    "torchrun-colon": "[rank{r}]: ",
    "no-colon": "[rank{r}] ",
    "torchrun-tee": "[default{r}]:",
    "mpirun": "[1,{r}]<stdout>:",
    "srun-label": "{r}: ",
}


def _write_per_rank(folder: Path, prefix: str, slow: int | None = 3, world: int = 4) -> Path:
    """One log file per rank, as `torchrun --log-dir` or a per-rank redirect leaves them."""
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(world):
        step = 0.2 if r == slow else 0.1
        lines = [f"{prefix.format(r=r)}step {s} loss: 1.{s} step_time: {step:.3f} data_time: 0.010"
                 for s in range(1, 8)]
        (folder / f"rank{r}.log").write_text("\n".join(lines) + "\n")
    return folder


def test_per_rank_files_in_a_folder_are_one_run(tmp_path: Path) -> None:
    evidence, skipped, _ = collect_scaling_evidence([_write_per_rank(tmp_path / "run", "[rank{r}]: ")])
    assert not skipped
    runs = analyze_scaling(evidence).summary["runs"]
    assert len(runs) == 1, [r["run"] for r in runs]
    assert runs[0]["ranks"] == [0, 1, 2, 3]
    assert runs[0]["world_size"] == 4


@pytest.mark.parametrize("style", sorted(PREFIXES))
def test_every_prefix_style_names_the_rank(style: str) -> None:
    line = f"{PREFIXES[style].format(r=5)}step 3 loss: 0.5 step_time: 0.120"
    (m,) = parse_step_lines([(1, line)], "console.log")
    assert m.rank == 5 and m.step == 3 and m.step_time == pytest.approx(0.12)


@pytest.mark.parametrize("style", sorted(PREFIXES))
def test_straggler_found_with_every_prefix_style_in_one_console(tmp_path: Path, style: str) -> None:
    lines = [f"{PREFIXES[style].format(r=r)}step {s} step_time: {0.2 if r == 2 else 0.1:.3f}"
             for s in range(1, 8) for r in range(4)]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n")
    facts = [f for f in analyze_scaling(collect_scaling_evidence([log])[0]).facts if f.name == "straggler"]
    assert {f.rank for f in facts} == {2}


@pytest.mark.parametrize("style", sorted(PREFIXES))
def test_straggler_found_across_per_rank_files(tmp_path: Path, style: str) -> None:
    report = run_scaling([_write_per_rank(tmp_path / style, PREFIXES[style])])
    straggler = [c for c in report.causes if "straggler-rank" in c.rules]
    assert straggler and straggler[0].ranks == [3]
    assert any(e.source and e.source.endswith("rank0.log") or "rank 3" in (e.text or "")
               for e in straggler[0].evidence)


def _m(run: str, **kw) -> StepMetric:
    return StepMetric(run=run, provenance=Provenance(probe="test", source=run, line=1), **kw)


def test_eta_is_t1_over_n_times_tn_even_when_both_batches_are_known() -> None:
    ev = [_m("1gpu", world_size=1, local_batch=16, step_time=0.1),
          _m("4gpu", world_size=4, local_batch=16, step_time=0.1)]
    facts = {f.name: f for f in analyze_scaling(ev).facts}
    assert facts["eta"].value == pytest.approx(0.1 / (4 * 0.1))
    assert "T1/(N*TN)" in facts["eta"].text and "0.1" in facts["eta"].text
    # the per-sample (throughput) efficiency is a separate, labelled number
    assert facts["eta_per_sample"].value == pytest.approx(1.0)


def test_terms_are_printed_in_the_text_report(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(f"step {s} step_time: 0.100 data_time: 0.060 comm_time: 0.010"
                             for s in range(1, 6)) + "\n")
    table = render_scaling_table(run_scaling([log]).scaling or {})
    assert "input" in table and "60.0 ms" in table and "60%" in table and "comm" in table
    out = subprocess.run([sys.executable, "-m", "diagnose", "scaling", str(log)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert "60.0 ms" in out and "input" in out


def test_rank_that_stopped_progressing_is_named(tmp_path: Path) -> None:
    lines = [f"[rank{r}]: step {s} loss: 1.0 step_time: 0.100" for s in range(1, 60) for r in range(4)
             if not (r == 2 and s > 12)]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n")
    report = run_scaling([log])
    stalled = [c for c in report.causes if "metrics-rank-stopped-progressing" in c.rules]
    assert stalled and stalled[0].ranks == [2] and stalled[0].id == "rank_failure"
    assert "step at 12" in stalled[0].summary
