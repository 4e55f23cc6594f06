"""Hostile and random input: the artifact parsers never raise, stay bounded, and skip what they cannot read."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.probes.artifacts import HEAD_BYTES, parse, records

PIECES = st.sampled_from([
    "#SBATCH --nodes=", "torchrun --nproc-per-node ", "srun -N", "export CUDA_VISIBLE_DEVICES=", "| GPUs | throughput |",
    "|---|---|", "| 2 | 1e400 |", "seed,accuracy", "1,nan", "zero_optimization:", "  stage: ", "{\"train_micro_batch_size_per_gpu\": ",
    "&a [*a]", "GPU0\tGPU1", "GPU0\t X \tNV12", "NVIDIA-SMI 550.1  Driver Version: 550.1  CUDA Version: 12.4",
    "TrainingArguments(", "per_device_train_batch_size=", "\\", "'", "\"", "\x00", "é", "-1", "99999999999999999999", "\n",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(PIECES, st.text(max_size=20)), max_size=60))
def test_random_pastes_never_raise(parts: list[str]) -> None:
    found, notes = parse("fuzz.txt", "".join(parts))
    assert isinstance(found, list) and isinstance(notes, list)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_never_raise(data: bytes) -> None:
    recs, _ = records("fuzz.bin", data)
    assert all("kind" in r for r in recs)


def test_huge_table_and_long_lines_are_capped() -> None:
    rows = "\n".join(f"| {i % 64 + 1} | {1000 + i} |" for i in range(200_000))
    text = "| GPUs | throughput |\n|---|---|\n" + rows + "\n" + "x" * 5_000_000
    started = time.process_time()  # CPU time: the shared test machine's load does not count
    found, notes = parse("huge.md", text)
    assert time.process_time() - started < 10
    assert len([e for e in found if e.kind == "step_metric"]) <= 2000
    assert any(f"first {HEAD_BYTES >> 20} MiB" in n for n in notes)


def test_many_commands_in_one_file() -> None:
    text = "\n".join(f"torchrun --nproc-per-node {i % 8 + 1} train.py" for i in range(20_000))
    found, _ = parse("cmds.txt", text)
    assert len(found) == 20_000 and all(e.provenance.line for e in found[:5])
