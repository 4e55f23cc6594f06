"""`diagnose logs` names the symptom from what the artifacts are (issue 11, item 5) and cites them;
stronger evidence of another symptom wins; the "next time" line names the missing artifact."""

from __future__ import annotations

import shutil
from pathlib import Path

from diagnose.commands.logs import run_logs

FIXTURES = Path(__file__).parent / "fixtures"

THROUGHPUT = ("| GPUs | throughput (samples/s) |\n|---|---|\n| 1 | 1000 |\n| 2 | 1400 |\n| 4 | 1900 |\n"
              "| 8 | 2300 |\n")
SEEDS = "seed,accuracy\n1,76.1\n2,71.3\n3,75.9\n"
OOM = ("Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.50 GiB is free.\n")


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_throughput_table_is_a_scaling_question(tmp_path: Path) -> None:
    report = run_logs([_folder(tmp_path, {"numbers.txt": THROUGHPUT})])
    assert report.symptom == "slow_scaling"
    assert report.causes[0].id == "communication_bound"
    assert any((e.source or "").endswith("numbers.txt") for e in report.causes[0].evidence)
    assert "eta" in report.causes[0].summary
    assert any("nvidia-smi topo -m" in step for step in report.next)  # what would separate the causes


def test_seed_results_are_a_divergence_question(tmp_path: Path) -> None:
    report = run_logs([_folder(tmp_path, {"runs.csv": SEEDS})])
    assert report.symptom == "divergence" and report.causes[0].id == "nondeterminism"
    assert any("seed" in step or "3 or more seeds" in step for step in report.next)


def test_batch_script_alone_is_a_startup_question(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "docs/sbatch_job.sh", tmp_path / "job.txt")
    report = run_logs([tmp_path])
    assert report.symptom == "hang_at_startup"
    top = report.causes[0]
    assert top.id == "launcher_misconfig" and "launch-batch-script-without-srun" in top.rules
    assert top.evidence[0].line == 2 and "--nodes=2" in (top.evidence[0].text or "")
    assert any("sbatch script" in step for step in report.next)


def test_strong_evidence_wins_over_the_artifact_kind(tmp_path: Path) -> None:
    scales_well = "| GPUs | throughput (samples/s) |\n|---|---|\n| 1 | 1000 |\n| 2 | 1950 |\n| 4 | 3900 |\n"
    report = run_logs([_folder(tmp_path, {"numbers.txt": scales_well, "rank0.log": OOM})])
    assert report.symptom == "oom" and report.causes[0].id == "per_rank_batch_too_large"
    assert "reported-slow-scaling" not in {r for c in report.causes for r in c.rules}


def test_told_symptom_is_kept(tmp_path: Path) -> None:
    report = run_logs([_folder(tmp_path, {"numbers.txt": THROUGHPUT})], symptom="diverged")
    assert report.symptom == "divergence"


def test_pcie_topology_with_slow_interconnect_names_the_link(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "docs/topo_pcie.txt", tmp_path / "topo.txt")
    shutil.copy(FIXTURES / "docs/nccl_tests.txt", tmp_path / "bench.txt")
    report = run_logs([tmp_path])
    assert report.symptom == "slow_scaling"
    top = report.causes[0]
    assert top.id == "communication_bound"
    assert {"system-topology-without-nvlink", "system-interconnect-bandwidth-low"} <= set(top.rules)


def test_versions_differ_between_two_nodes_collect_env(tmp_path: Path, fixture_text) -> None:
    env = fixture_text("real/collect_env.txt")
    (tmp_path / "node1.txt").write_text(env)
    (tmp_path / "node2.txt").write_text(env.replace("PyTorch version: 2.13.0+cpu", "PyTorch version: 2.12.1+cpu"))
    report = run_logs([tmp_path])
    assert report.causes and report.causes[0].id == "version_mismatch"
    assert "2.12.1+cpu vs 2.13.0+cpu" in report.causes[0].summary


def test_results_keyed_by_gpu_count_are_a_divergence_question(tmp_path: Path) -> None:
    text = "1 gpu: 0.7729\n2 gpus: 0.7750\n4 gpus: 0.7478\n8 gpus: 0.5373\n"
    report = run_logs([_folder(tmp_path, {"miou.txt": text})])
    assert report.symptom == "divergence"
    assert {"effective_batch_change", "batchnorm_sync"} <= {c.id for c in report.causes[:3]}
    assert any((e.source or "").endswith("miou.txt") for e in report.causes[0].evidence)
