"""Trainer and logger progress lines (fixtures/trainers/, each rendered from the project's own format string, see
SOURCES.md there) become step metrics through the log probe's one pass, and their facts reach the rules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from diagnose.commands.logs import collect_logs, run_logs

TRAINERS = Path(__file__).parent / "fixtures" / "trainers"

# fixture -> fields every step metric of it (but the HF summary lines) must have, and a sample value
FORMATS = {
    "pytorch_examples_imagenet.log": (
        {"step", "epoch", "step_time", "data_time", "loss"},
        {"data_time": 0.005},
    ),
    "torchvision_metriclogger.log": (
        {"step", "step_time", "data_time", "loss", "lr", "throughput"},
        {"lr": 0.1},
    ),
    "hf_trainer.log": ({"loss", "lr", "step", "step_time", "throughput"}, {"lr": 4.5e-05}),
    "lightning_tqdm.log": ({"step", "epoch", "step_time", "loss"}, {"steps_per_epoch": 1000}),
    "lightning_rich.log": ({"step", "epoch", "step_time", "loss", "steps_per_epoch"}, {"epoch": 2}),
    "deepspeed.log": (
        {"step", "step_time", "loss", "lr", "throughput", "comm_time", "compute_time"},
        {"step_time": 0.515, "comm_time": 0.0498},
    ),
    "megatron.log": ({"step", "step_time", "loss", "lr"}, {"lr": 1.2e-05}),
    "torchtitan.log": ({"step", "loss", "throughput"}, {"throughput": 7892.0}),
    "torchtune.log": ({"step", "loss", "lr", "throughput", "step_time"}, {"step_time": 2.0}),
    "mmengine.log": ({"step", "epoch", "step_time", "data_time", "loss", "lr"}, {"data_time": 0.5123}),
    "mmcv.log": ({"step", "epoch", "step_time", "data_time", "loss", "lr"}, {"step_time": 0.743}),
    "mmcv.log.json": ({"step", "epoch", "step_time", "data_time", "loss"}, {"step_time": 0.74}),
    "timm.log": ({"step", "epoch", "step_time", "data_time", "loss", "throughput"}, {"throughput": 2968.12}),
    "fairseq.log": ({"step", "epoch", "step_time", "loss", "throughput"}, {"throughput": 12345.6}),
    "fairseq_json.log": ({"step", "epoch", "step_time", "loss", "throughput"}, {"loss": 8.593}),
    "fairseq_legacy.log": ({"step", "epoch", "step_time", "loss", "throughput"}, {"throughput": 12345.0}),
    "ultralytics.log": ({"epoch", "loss", "step_time"}, {"loss": 1.47 + 2.485 + 1.322}),
    "yolov5.log": ({"epoch", "loss", "step_time"}, {"epoch": 0}),
    "keras2.log": ({"step", "step_time", "loss"}, {"step_time": 0.002}),
    "keras3.log": ({"step", "step_time", "loss"}, {"step_time": 0.001}),
    "metrics.jsonl": ({"step", "step_time", "data_time", "loss", "lr"}, {"data_time": 0.02}),
    "metrics.csv": ({"step", "step_time", "data_time", "loss"}, {"step_time": 0.41}),
    "steps.md": ({"step", "step_time", "data_time", "loss"}, {"data_time": 0.02}),
    "scaling.md": ({"world_size", "step_time", "throughput"}, {"throughput": 1200.0}),
}


def _steps(name: str) -> list[dict]:
    return _steps_of(TRAINERS / name)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_trainer_format_gives_step_metrics(name: str) -> None:
    want, sample = FORMATS[name]
    steps = _steps(name)
    assert len(steps) >= 4, name
    seen = {k for s in steps for k, v in s.items() if v is not None}
    assert want <= seen, (name, want - seen)
    for key, val in sample.items():
        assert any(s.get(key) is not None and s[key] == pytest.approx(val) for s in steps), (name, key, val)


def test_units_and_durations() -> None:
    by_line = {s["provenance"]["line"]: s for s in _steps("units.log")}
    assert by_line[1]["throughput"] == pytest.approx(1200.0) and by_line[1]["loss"] == pytest.approx(2.31)
    assert by_line[1]["step_time"] == pytest.approx(0.412)
    assert by_line[3]["throughput"] == pytest.approx(1.1e6)  # `tokens/s: 1.1M`
    assert by_line[4]["epoch_time"] == pytest.approx(9000.0)  # `2h30m`
    assert by_line[5]["epoch_time"] == pytest.approx(3723.0)  # `1:02:03`, once read as 1 s
    assert by_line[6]["step_time"] == pytest.approx(1.0)  # `1.00s/it`


@pytest.mark.parametrize("name", ["nearmiss_cmdline.txt", "nearmiss_config.yaml", "nearmiss_config.json"])
def test_command_lines_and_config_keys_are_not_step_metrics(name: str) -> None:
    assert _steps(name) == []


def test_a_command_line_in_a_training_log_sets_nothing(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "python train.py --lr=0.01 --world_size=8 --batch_size=256 --rank 0\n"
        "step 10 loss: 2.5 step_time: 0.4\nstep 20 loss: 2.3 step_time: 0.4\n"
    )
    steps = _steps_of(log)
    assert [s["provenance"]["line"] for s in steps] == [2, 3]
    assert all(s["lr"] is None and s["world_size"] is None and s["local_batch"] is None for s in steps)


def test_evaluation_lines_are_not_training_steps(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "step: 10  loss:  7.9  memory: 31.20GiB(39.31%)  tps: 7,891\n"
        "validate step: 10  loss:  7.4  memory: 31.20GiB(39.31%)  tps: 9,001\n"
    )
    assert [s["loss"] for s in _steps_of(log)] == [7.9]


def _steps_of(path: Path) -> list[dict]:
    evidence, _, _ = collect_logs([path])
    return [json.loads(e.model_dump_json()) for e in evidence if e.kind == "step_metric"]


def _top(paths: list[Path]) -> tuple[str | None, list[str]]:
    report = run_logs(paths)
    return report.symptom, [c.id for c in report.causes[:3]]


def test_table_across_gpu_counts_gives_eta_and_slow_scaling() -> None:
    symptom, causes = _top([TRAINERS / "scaling.md"])
    assert symptom == "slow_scaling" and causes[0] == "communication_bound"


def test_per_step_data_wait_gives_input_bound() -> None:
    for name in ("mmengine.log", "mmcv.log"):  # data_time 0.51 of a 0.74 s step
        symptom, causes = _top([TRAINERS / name])
        assert causes[0] == "input_pipeline_bound", (name, causes)


def test_results_across_seeds_give_nondeterminism() -> None:
    symptom, causes = _top([TRAINERS / "seeds.md"])
    assert symptom == "divergence" and causes[0] == "nondeterminism"


def _yolo(nan_from: int) -> str:
    rows = ["", ("%11s" * 7) % ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size")]
    for e in range(1, 12):
        vals = (1.5 - 0.05 * e, 2.5 - 0.1 * e, 1.3 - 0.02 * e) if e < nan_from else (math.nan,) * 3
        rows.append(
            (("%11s" * 2 + "%11.4g" * 5) % (f"{e}/100", "3.42G", *vals, 45, 640))
            + ": 100%|██████████| 469/469 [01:23<00:00,  5.62it/s]"
        )
    return "\n".join(rows) + "\n"


def test_loss_turning_nan_in_a_table_without_the_word_loss_gives_divergence(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_yolo(nan_from=9))
    symptom, causes = _top([tmp_path / "train.log"])
    assert symptom == "divergence" and causes[0] == "framework_bug"
    (tmp_path / "train.log").write_text(_yolo(nan_from=99))
    assert _top([tmp_path / "train.log"])[0] != "divergence"


def test_fairseq_json_loss_nan_gives_divergence(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 12):
        loss = f"{9.5 - 0.4 * i:.3f}" if i < 9 else "nan"
        lines.append(
            f"2021-01-01 10:00:{i:02d} | INFO | train_inner | "
            + json.dumps(
                {
                    "epoch": 1,
                    "update": round(i * 0.05, 3),
                    "loss": loss,
                    "wps": "12345.6",
                    "ups": "2.05",
                    "num_updates": str(i * 100),
                    "lr": "0.0005",
                }
            )
        )
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    symptom, causes = _top([tmp_path / "train.log"])
    assert symptom == "divergence" and causes[0] == "framework_bug"


def test_megatron_loss_that_rises_gives_divergence(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 41):
        loss = 9.0 - 0.2 * i if i < 20 else 5.2 + 0.6 * (i - 20)
        lines.append(
            f" [2025-01-01 10:{i:02d}:00.123456] iteration {i * 10:8d}/{1000:8d} | consumed samples: "
            f"{i * 1280:12d} | elapsed time per iteration (ms): 912.4 | learning rate: 1.200000E-04 | "
            f"global batch size:   128 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 1.234 |"
        )
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    symptom, causes = _top([tmp_path / "train.log"])
    assert symptom == "divergence" and causes[0] == "effective_batch_change"


def test_torchtitan_rank_that_stops_logging_is_named(tmp_path: Path) -> None:
    lines = []
    for step in range(1, 41):
        for rank in range(4):
            if rank == 2 and step > 12:
                continue
            lines.append(
                f"[rank{rank}]:[titan] 2025-01-01 10:00:00,000 - root - INFO - \x1b[31mstep: {step:2}  "
                f"\x1b[32mloss: {8 - step * 0.05:8.5f}  \x1b[34mtps: 7,891  \x1b[35mmfu: 38.60%\x1b[39m"
            )
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    report = run_logs([tmp_path / "console.log"])
    stalled = [c for c in report.causes if c.id == "rank_failure"]
    assert stalled and 2 in stalled[0].ranks


def test_deepspeed_wall_clock_breakdown_gives_the_communication_term(tmp_path: Path) -> None:
    """`wall_clock_breakdown: true` (deepspeedai/DeepSpeed:deepspeed/utils/timer.py): an all-reduce longer than the
    forward, inner backward and optimizer step together is a communication-bound step."""
    lines = [
        f"[2024-05-01 10:00:{i:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: 60.10 | "
        f"bwd: 400.20 | bwd_inner: 120.40 | bwd_allreduce: 279.80 | step: 10.20"
        for i in range(1, 9)
    ]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    steps = _steps_of(tmp_path / "train.log")
    assert steps[0]["comm_time"] == pytest.approx(0.2798) and steps[0]["compute_time"] == pytest.approx(0.1907)
    symptom, causes = _top([tmp_path / "train.log"])
    assert causes[0] == "communication_bound", causes
