"""Symptom naming from what users write (issue 11, item 5): the cue classifier (probes/artifacts/cues.py with
rules/artifacts/cues.yaml) reads each sentence of tests/prose/sentences.yaml as a one-file report.

The sentences come from real threads kept apart from every held-out corpus. `write` sentences were read while
the cues were written; `measure` sentences were not, so their floors are a measurement, not a fit. A wrong
symptom is worse than none (it sends the reader to the wrong runbook row), so the wrong share has its own cap.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from diagnose.probes.artifacts import cues
from diagnose.probes.artifacts.source import Source

SYMPTOMS = {
    "hang_at_startup",
    "hang_mid_run",
    "crash",
    "oom",
    "slow_scaling",
    "slow_step",
    "divergence",
    "resume_mismatch",
}
SENTENCES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "sentences.yaml").read_text(encoding="utf-8")
)["sentences"]

# measured with the cues of this commit (right = the labelled symptom or an `also`; none = no symptom named):
# write 0.930 right / 0.019 wrong, measure 0.756 / 0.046, negatives quiet 0.943 over the first 819 sentences. The
# 964 gathered in session 14 (issue titles and first sentences of 545 threads, to train the wording guess of
# probes/artifacts/wording.py) were never read while cues were written, so both of their halves are measurements:
# the cues name the right symptom in 0.60 of their symptom sentences (0.601 write half, 0.586 measure half) with
# 0.04-0.05 wrong, which took the whole file to write 0.783 / measure 0.693 right and the quiet negatives to 0.928.
# No cue was edited for them; the floors follow the data. Under the cues the wording guess takes what they leave.
FLOORS = {  # split: (least right share, most wrong share)
    "write": (0.77, 0.035),
    "measure": (0.68, 0.055),
}
NEGATIVES_QUIET = 0.92  # of the sentences that describe no symptom, the share that must name none


def _named(text: str) -> str:
    found = cues.parse(Source("report.txt", text + "\n"))
    return found[0].symptom if found else "none"


def _outcome(sentence: dict[str, Any]) -> str:
    got = _named(sentence["text"])
    if got == sentence["symptom"] or got in sentence.get("also", ()):
        return "right"
    return "none" if got == "none" else "wrong"


def test_the_sentences_are_labelled_and_sourced() -> None:
    assert len(SENTENCES) >= 250
    assert sum(s["symptom"] == "none" for s in SENTENCES) >= 50
    assert len({s["text"] for s in SENTENCES}) == len(SENTENCES)
    for s in SENTENCES:
        assert s["symptom"] in SYMPTOMS | {"none"}, s
        assert set(s.get("also", ())) <= SYMPTOMS | {"none"}, s
        assert s["split"] in FLOORS, s
        assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+|https://\S+", s["source"]), s
    by_thread: dict[str, set[str]] = {}
    for s in SENTENCES:
        by_thread.setdefault(s["source"], set()).add(s["split"])
    assert all(len(splits) == 1 for splits in by_thread.values())  # no thread on both sides of the split


@pytest.mark.parametrize("split", sorted(FLOORS))
def test_the_symptom_named_from_sentences_meets_its_floor(split: str) -> None:
    rows = [s for s in SENTENCES if s["split"] == split]
    outcomes = Counter(_outcome(s) for s in rows)
    right, wrong = outcomes["right"] / len(rows), outcomes["wrong"] / len(rows)
    least_right, most_wrong = FLOORS[split]
    misses = [(s["symptom"], _named(s["text"]), s["source"]) for s in rows if _outcome(s) != "right"]
    assert right >= least_right, (split, round(right, 3), misses)
    assert wrong <= most_wrong, (split, round(wrong, 3), [m for m in misses if m[1] != "none"])


def test_sentences_that_describe_no_symptom_name_none() -> None:
    quiet = [s for s in SENTENCES if s["symptom"] == "none"]
    loud = [(s["text"], _named(s["text"])) for s in quiet if _outcome(s) != "right"]
    assert 1 - len(loud) / len(quiet) >= NEGATIVES_QUIET, loud


# xcmyz/FastSpeech#11: the sentence names no GPU count, the command line beside it starts four
SLOWER = "Hi, the training time for each step was slower than I expected it to be."


@pytest.mark.parametrize(
    ("command", "symptom"),
    [
        ("CUDA_VISIBLE_DEVICES=0,1,2,3 python3 train_accelerated.py", "slow_scaling"),
        ("torchrun --nproc_per_node=4 train.py", "slow_scaling"),
        ("CUDA_VISIBLE_DEVICES=0 python3 train_accelerated.py", "slow_step"),
    ],
)
def test_a_command_line_that_starts_several_gpus_makes_it_a_multi_gpu_report(
    command: str, symptom: str
) -> None:
    assert _named(f"{SLOWER}\n\n{command}") == symptom


@pytest.mark.parametrize(
    ("text", "symptom"),
    [
        (
            "[Bug]: During multi-GPU training, all cards occupy 100% and freeze",
            "hang_mid_run",
        ),  # speechbrain#2055
        (
            "init_process_group() sometimes hangs (not stable) with pytorch 1.0.0",
            "hang_at_startup",
        ),  # pytorch#15638
        (
            "NCCL connects fine, both GPUs show Init COMPLETE, then crashes on first forward pass.",
            "crash",
        ),  # TRELLIS.2#95
    ],
)
def test_a_sentence_that_opens_like_a_log_or_a_call_is_still_read(text: str, symptom: str) -> None:
    assert _named(text) == symptom
