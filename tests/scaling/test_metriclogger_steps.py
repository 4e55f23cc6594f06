"""torchvision references' MetricLogger.log_every lines (and its copies: DeiT, MAE, DINO, DETR, BLIP, LAVIS) as steps.

Formats from pytorch/vision:references/classification/utils.py (`<header>  [ i/N]  eta: ..  <meters>  time: ..  data: ..
 max mem: ..`, then `<header> Total time: ..`), facebookresearch/deit:utils.py and facebookresearch/detr:util/misc.py
(`(x s / it)` on the end line), facebookresearch/dino:utils.py (`Epoch: [e/E]`), salesforce/LAVIS (`Train: data epoch:
[e]` header, `Evaluation` for its evaluation loop). `time` is the whole iteration, the data wait included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.probes.steptime.probe import parse_step_lines


def _parse(text: str, source: str = "train.log"):
    return parse_step_lines(enumerate(text.splitlines(), 1), source)


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (
            "Epoch: [3]  [ 100/5005]  eta: 0:25:12  lr: 0.1  loss: 2.3456 (2.4567)  time: 0.3021  data: 0.0012  max mem: 10768",
            {
                "epoch": 3,
                "step": 100,
                "steps_per_epoch": 5005,
                "step_time": 0.3021,
                "data_time": 0.0012,
                "loss": 2.3456,
                "lr": 0.1,
            },
        ),
        ("time: 40.1906  data: 38.0570  max mem: 10768", {"step_time": 40.1906, "data_time": 38.057}),
        (
            "Epoch: [12/100]  [ 400/1251]  eta: 0:06:01  loss: 6.1 (6.3)  time: 0.4310  data: 0.0019  max mem: 9623",
            {"epoch": 12, "step": 400, "steps_per_epoch": 1251, "step_time": 0.431, "data_time": 0.0019},
        ),
        (
            "2023-05-01 10:00:00,000 [INFO] Train: data epoch: [0]  [  50/5000]  eta: 1:02:03  lr: 0.000100  loss: 2.3456  "
            "time: 1.2000  data: 0.9000  max mem: 10768",
            {"epoch": 0, "step": 50, "steps_per_epoch": 5000, "step_time": 1.2, "data_time": 0.9},
        ),
        (
            "Epoch: [0]\t[  10/1000]\teta: 0:10:00\tloss: 2.3 (2.4)\ttime: 0.6000\tdata: 0.0100",
            {"epoch": 0, "step": 10, "step_time": 0.6, "data_time": 0.01},
        ),
        (
            "Train Epoch: [1]  [ 50/704]  eta: 0:07:21  lr: 0.000020  time: 0.6211  data: 0.0003  max mem: 15621 res mem: 16022",
            {"epoch": 1, "step": 50, "step_time": 0.6211, "data_time": 0.0003},
        ),
        (
            "Epoch: [3] Total time: 0:25:00 (0.3000 s / it)",
            {"epoch": 3, "epoch_time": 1500.0, "step_time": 0.3},
        ),
        (
            "Epoch: [0] Total time: 1 day, 2:03:04 (18.7523 s / it)",
            {"epoch_time": 93784.0, "step_time": 18.7523},
        ),
        ("Epoch: [3] Total time: 0:25:00", {"epoch_time": 1500.0}),
    ],
)
def test_metriclogger_lines(line: str, want: dict) -> None:
    (metric,) = _parse(line)
    for key, val in want.items():
        assert getattr(metric, key) == pytest.approx(val), (key, metric)


@pytest.mark.parametrize(
    "line",
    [
        "Test:  [  0/196]  eta: 0:03:10  loss: 0.9 (0.9)  acc1: 78.1 (78.1)  time: 0.9710  data: 0.8120  max mem: 2345",
        "Test: Total time: 0:00:38 (0.1960 s / it)",
        "2023-05-01 10:30:00,000 [INFO] Evaluation  [ 10/100]  eta: 0:00:30  time: 0.3000  data: 0.2000  max mem: 10768",
        # near misses: a data path, an elapsed total without the MetricLogger header (mmengine's `data_time` is
        # a counter example in steptime.yaml)
        "load time: 0.52, data: /datasets/imagenet",
        "Total time: 0:41:12",
    ],
)
def test_evaluation_lines_and_near_misses_give_no_training_step(line: str) -> None:
    assert not any(m.step_time or m.data_time for m in _parse(line))


def test_pasted_fragment_waiting_for_data_is_input_bound(tmp_path: Path) -> None:
    """One pasted line: 38 of each 40 s wait for the batch."""
    (tmp_path / "report.txt").write_text("time: 40.1906  data: 38.0570  max mem: 10768\n")
    report = run_logs([tmp_path])
    assert report.causes and report.causes[0].id == "input_pipeline_bound"


def test_epoch_waiting_for_data_is_input_bound_and_a_fed_one_is_not(tmp_path: Path) -> None:
    slow = "".join(
        f"Epoch: [3]  [{i:4d}/5005]  eta: 0:25:12  lr: 0.1  loss: 2.3456 (2.4567)  time: 0.9{i % 7}21  "
        f"data: 0.6{i % 5}12  max mem: 10768\n"
        for i in range(100, 600, 100)
    )
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "train.log").write_text(slow + "Epoch: [3] Total time: 1:15:00 (0.8991 s / it)\n")
    report = run_logs([tmp_path / "slow"])
    assert report.causes and report.causes[0].id == "input_pipeline_bound"
    fed = "".join(
        f"Epoch: [3]  [{i:4d}/5005]  eta: 0:25:12  lr: 0.1  loss: 2.3456 (2.4567)  time: 0.30{i % 7}1  "
        f"data: 0.001{i % 5}  max mem: 10768\n"
        for i in range(100, 600, 100)
    )
    (tmp_path / "fed").mkdir()
    (tmp_path / "fed" / "train.log").write_text(fed)
    assert "input_pipeline_bound" not in [c.id for c in run_logs([tmp_path / "fed"]).causes]
