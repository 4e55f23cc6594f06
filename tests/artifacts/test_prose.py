"""Measurements stated in sentences (rules/artifacts/prose.yaml): each timing, rate or result is paired with
the GPU count of its clause, and read only when the text gives it at two or more world sizes.

The sentences are users' own words from public threads (cited beside each), so the parser is held to how
people really write their numbers, not to one layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.probes.artifacts import parse

# (source thread, text, field, {world size: value})
STATED = [
    ("https://github.com/MIC-DKFZ/nnUNet/issues/795",
     "For example, training a 2d model similar to the BRATS segmentation task takes around 49s per epoch using a "
     "single GPU vs. 82s using 4 GPUs. I have verified that all GPUs are busy during training.",
     "epoch_time", {1: 49.0, 4: 82.0}),
    ("https://github.com/WongKinYiu/PyTorch_YOLOv4/issues/394",
     "Hello, I use DDP mode to find that the training time of two GPUs is 26min and that of one GPU is 16min in an "
     "epoch. Do you know why?",
     "epoch_time", {2: 1560.0, 1: 960.0}),
    ("https://github.com/yzhangcs/parser/issues/55",
     "On a single GPU, it takes about 25 seconds whereas when I use two GPUs (installed on the same machine), it "
     "just seems to pause at the start of a new epoch and hence takes about 58 seconds.",
     "epoch_time", {1: 25.0, 2: 58.0}),
    ("https://github.com/walkerning/aw_nas/pull/17",
     "single GPU: 27s/epoch 88.1@15epochs\nDistributedDP(two GPUs): 18s/epoch 87.0@15epochs",
     "epoch_time", {1: 27.0, 2: 18.0}),
    ("https://github.com/huggingface/sentence-transformers/issues/2864",
     "When I train on 4xGPUs:\nthe training takes around 130 Hours (for steps= (n_samples/batch_size)/n_gpus) "
     "assuming I'm training for one epoch\n\nI got suspicious of the time and tried to train on a single GPU, and "
     "the time I got was 30 Hours for the same number of steps and batch_size",
     "epoch_time", {4: 468000.0, 1: 108000.0}),
    # counts and times as Chinese reports write them (单卡, 4卡, 双卡; 小时, 天, 秒)
    ("https://github.com/hiyouga/ChatGLM-Efficient-Tuning/issues/122", "单卡5小时，双卡却是4小时",
     "epoch_time", {1: 18000.0, 2: 14400.0}),
    ("https://github.com/zjhuang22/maskscoring_rcnn/issues/91",
     "单卡（batch_size = 16) 预计耗时4天\n4卡（每个卡batch_size = 16，共64)，  预计耗时也是4天",
     "epoch_time", {1: 345600.0, 4: 345600.0}),
    ("https://github.com/zhiyuanyou/UniAD/issues/41",
     "单卡功耗能跑到0.15秒一个batch，GPU功耗280w。同样的4卡只能跑到0.35秒一个batch。gpu功耗150w。",
     "step_time", {1: 0.15, 4: 0.35}),
    # a launch flag as the count, the numbers on the line after it
    ("https://github.com/ialhashim/DenseDepth/issues/104",
     "i am training nyu dataset and used the tags (--gpus 1 --bs 6) on aws v100 gpu with these results:\n"
     "**450ms/step 3803s/epoch**\ni then used the tags (--gpus 4 --bs 24) on an aws machine with aws x4 v100 and "
     "got:\n**2s/step  3471s/epoch**",
     "epoch_time", {1: 3803.0, 4: 3471.0}),
]

# One count beside one number, or numbers that are not per world size: nothing is read.
UNPAIRED = [
    "I run it on 4 TITAN Xp GPU. And yet, each epoch roughly takes 2 hours. Is that normal?",  # RandWireNN#7
    "I use 6 2080Ti GPUs and the time is about 7 hours. I think the time duration is reasonable for me.",
    "GPU 0 took 3.2s and GPU 1 took 3.4s",  # device indices, not counts
    "2024-05-01 12:00:01 rank 3: step 10 loss 2.31 (0.42 s)",
    # a timeout and a bound are limits, not timings (open-mmlab/mmpretrain#1233's wording)
    "On 2 gpus training hangs after one epoch. It then timeouts after 30min. The same code runs fine on a single GPU"
    " and the validation step takes <<30min",
]


def _steps(text: str) -> list:
    found, notes = parse("report.txt", text)
    assert not notes
    return [e for e in found if e.kind == "step_metric"]


@pytest.mark.parametrize(("source", "text", "field", "want"), STATED, ids=[s[0].rsplit("/", 3)[-3] for s in STATED])
def test_stated_timings_pair_with_their_gpu_count(source: str, text: str, field: str, want: dict[int, float]) -> None:
    got = {s.world_size: getattr(s, field) for s in _steps(text)}
    assert set(got) == set(want), source
    for ws, value in want.items():
        assert got[ws] == pytest.approx(value), (source, ws)


@pytest.mark.parametrize("text", UNPAIRED)
def test_one_count_or_no_count_reads_nothing(text: str) -> None:
    assert _steps(text) == []


def test_results_per_gpu_count_ask_a_divergence_question(tmp_path: Path) -> None:
    # open-mmlab/mmdetection#3621, the user's own sentence
    (tmp_path / "report.txt").write_text(
        "When I train on a single GPU, I set imgs_per_gpu = 8, four GPU training, set imgs_per_gpu = 2, but the "
        "accuracy of the model obtained is quite different, single gpu got 0.75, multi-gpu only got 0.71, tried "
        "several times.\n")
    found, _ = parse("report.txt", (tmp_path / "report.txt").read_text())
    results = {(e.world_size, e.values) for e in found if e.kind == "metric_series"}
    assert results == {(1, (0.75,)), (4, (0.71,))}  # "multi-gpu" is the four GPUs the text names
    report = run_logs([tmp_path])
    assert report.symptom == "divergence"
    assert "batchnorm_sync" in [c.id for c in report.causes[:3]]


def test_stated_slowdown_is_a_scaling_question_with_eta(tmp_path: Path) -> None:
    (tmp_path / "epochs.txt").write_text(STATED[0][1] + "\n")
    report = run_logs([tmp_path])
    assert report.symptom == "slow_scaling"
    top = report.causes[0]
    assert top.evidence[0].line == 1 and "14.9% at N=4" in (top.evidence[0].text or "")  # 49 / (4 x 82)
    assert report.scaling and report.scaling["runs"]
