"""Where a resumed run says it starts, read end to end from log text built from the emitters' format strings:
the HF Trainer's by-iteration skip (transformers 4.6-4.30), torchtitan's loaded step vs the step it starts at, and
mmcv/mmengine's collect_results_cpu part file missing on the master."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs

_TITAN = (
    "[rank{r}]:[titan] 2024-10-01 12:00:00,000 - root - INFO - Loading the checkpoint at step {loaded}.\n"
    "[rank{r}]:[titan] 2024-10-01 12:00:03,000 - root - INFO - Finished loading the checkpoint in 3.00 seconds.\n"
    "[rank{r}]:[titan] 2024-10-01 12:00:05,000 - root - INFO - Training starts at step {start}, with local batch "
    "size 8, global batch size 64, sequence length 8192, total steps 1000 (warmup 200)\n"
)


def _diagnose(tmp_path: Path, text: str, **kwargs):
    """The report for one train.log holding ``text``."""
    (tmp_path / "train.log").write_text(text)
    return run_logs([tmp_path], **kwargs)


def _top(report) -> tuple[str | None, str | None]:
    return (report.causes[0].id, report.causes[0].confidence) if report.causes else (None, None)


@pytest.mark.parametrize(("loaded", "start", "fires"), [(45, 26, True), (45, 46, False)])
def test_torchtitan_start_step(tmp_path: Path, loaded: int, start: int, fires: bool) -> None:
    report = _diagnose(
        tmp_path,
        "".join(_TITAN.format(r=r, loaded=loaded, start=start) for r in range(2)),
    )
    assert (_top(report) == ("framework_bug", "low")) is fires, _top(report)


def test_hf_trainer_skipping_bar(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "  Continuing training from global step 93017\n"
        "  Will skip the first 0 epochs then the first 93017 batches in the first epoch. If this takes a lot of "
        "time, you can add the `--ignore_data_skip` flag to your launch command, but you will resume the training "
        "on data already seen by your model.\n"
        "Skipping the first batches:   0%|          | 0/122500 [00:00<?, ?it/s]\r"
        "Skipping the first batches:  76%|███████▌  | 93017/122500 [6:35:47<2:26:12,  3.36it/s]\n",
    )
    assert _top(report) == ("framework_bug", "low")
    assert "93017/122500" in report.causes[0].summary


def test_hf_trainer_fast_skip_is_quiet(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "  Continuing training from global step 500\n"
        "  Will skip the first 0 epochs then the first 500 batches in the first epoch.\n",
        symptom="resume",
    )
    assert all("hf-trainer-resume-skips-batches-by-iteration" not in (c.rules or ()) for c in report.causes)


def test_mm_part_file_missing(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.8/site-packages/mmcv/engine/test.py", line 148, in collect_results_cpu\n'
        "    part_result = mmcv.load(part_file)\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'work_dirs/retinanet/.eval_hook/part_8.pkl'\n",
    )
    assert _top(report) == ("filesystem", "medium")
