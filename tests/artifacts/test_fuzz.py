"""Hostile and random input: the artifact parsers never raise, stay bounded, and skip what they cannot read."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.probes.artifacts import HEAD_BYTES, parse, records
from diagnose.probes.steptime.probe import parse_step_lines
from diagnose.probes.steptime.scan_steps import step_candidate_lines
from diagnose.probes.steptime.spec import steptime_spec

# Progress-line pieces of every trainer format the step-time signatures read (fixtures/trainers/SOURCES.md)
STEP_PIECES = st.sampled_from([
    "Epoch [1][50/1000]\t", "Iter [100/160000]\t", "time: ", "data_time: ", '"mode": "train", ', '"iter": ', '"time": ',
    '"wps": "', '", "ups": "', '"num_updates": "', "| wps ", " | ups ", "| num_updates ", "epoch 001 | ", "1/100 ",
    "3.42G ", "nan ", "1.234 ", "45 640: ", "1875/1875 ", "2ms/step", " - loss: ", "450/1000 0:01:02 • ",
    "iter 100: loss 2.3, time ", "1.2k samples/s", "tokens/s: 1.1M", "Epoch 1 took ", "2h30m", "1:02:03", "lr=[",
    "learning rate: ", "iter time (s): ", "validate step: ", "python train.py --lr=", "\x1b[31m", "\x1b[", "\r", "\n",
    "loss ", "\"step\": ", "1e999", "-0", "99999999999999999999", "\x00", "é",
])

PIECES = st.sampled_from([
    "#SBATCH --nodes=", "torchrun --nproc-per-node ", "srun -N", "export CUDA_VISIBLE_DEVICES=", "| GPUs | throughput |",
    "|---|---|", "| 2 | 1e400 |", "seed,accuracy", "1,nan", "zero_optimization:", "  stage: ", "{\"train_micro_batch_size_per_gpu\": ",
    "&a [*a]", "GPU0\tGPU1", "GPU0\t X \tNV12", "NVIDIA-SMI 550.1  Driver Version: 550.1  CUDA Version: 12.4",
    "TrainingArguments(", "per_device_train_batch_size=", "\\", "'", "\"", "\x00", "é", "-1", "99999999999999999999", "\n",
    "| step | loss | step time (ms) |", "step,train_loss,data_time_ms", "| 1.2k |", "| -1 |", "5,nan,", "1e999", "12G",
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
    launches = [e for e in found if e.kind == "launch_spec"]
    assert len(launches) == 20_000 and all(e.provenance.line for e in launches[:5])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(STEP_PIECES, st.text(max_size=12)), max_size=80), st.integers(0, 400))
def test_random_progress_lines_never_raise(parts: list[str], cut: int) -> None:
    data = "".join(parts).encode("utf-8", "surrogatepass")
    for buf in (data, data[:cut]):  # whole, and truncated mid-line or mid-character
        found = parse_step_lines(step_candidate_lines(buf, steptime_spec()), "fuzz.log")
        assert all(m.kind == "step_metric" for m in found)


def test_lines_repeating_a_format_anchor_stay_linear() -> None:
    """A 4 MiB file whose lines repeat the start of a format without its end (the worst case for an extract that
    scans ahead): each line is read from its first anchor only."""
    anchors = ["Epoch [1][1/1] ", '"mode": "train", "iter": 1, ', "Epoch: [0]  [ 1/1]  eta: ", "eta: 1 iter: 1 ",
               "1/1 1G " + "1 " * 10, "epoch 1 | wps 1 | ups 1 ", '"epoch": 1, "wps": "1", "ups": "1", ', "1/1 [00:00<"]
    lines = [(a * (4096 // len(a) + 1))[:4095] for a in anchors]
    data = ("\n".join(lines[i % len(lines)] for i in range(1000)) + "\n").encode()
    started = time.process_time()
    parse_step_lines(step_candidate_lines(data, steptime_spec()), "hostile.log")
    assert time.process_time() - started < 8
