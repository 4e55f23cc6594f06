"""Report sentences of the issue-11 training sample (tests/artifacts/fixtures/reports/sentences_h8_train.yaml):
each is read as the signature and/or the symptom its thread describes. The sample is kept apart from every
held-out corpus (its threads are claimed as training threads), so these are fixtures, not measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from diagnose.commands.logs import collect_logs, run_logs
from diagnose.probes.artifacts import cues
from diagnose.probes.artifacts.source import Source

SAMPLE = yaml.safe_load(
    (Path(__file__).parent / "fixtures" / "reports" / "sentences_h8_train.yaml").read_text()
)


def _report(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "report.txt"
    path.write_text(text + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("case", [c for c in SAMPLE if "signature" in c], ids=lambda c: c["source"])
def test_the_report_signature_reads_the_sentence(case: dict[str, Any], tmp_path: Path) -> None:
    evidence, _, _ = collect_logs([_report(tmp_path, case["text"])])
    found = {getattr(e, "signature", None) for e in evidence}
    assert case["signature"] in found, (case["source"], found)


@pytest.mark.parametrize("case", [c for c in SAMPLE if "symptom" in c], ids=lambda c: c["source"])
def test_the_report_names_its_symptom(case: dict[str, Any], tmp_path: Path) -> None:
    report = run_logs([_report(tmp_path, case["text"])])
    assert report.symptom == case["symptom"], (case["source"], report.symptom)


def test_the_sample_cites_its_threads() -> None:
    assert len(SAMPLE) >= 20 and all("#" in c["source"] and c["text"].strip() for c in SAMPLE)


def test_cjk_sentences_are_read_as_prose() -> None:
    (found,) = cues.parse(Source("report.txt", "断点续训时损失值的大小能接上吗"))
    assert found.symptom == "resume_mismatch"
    assert (
        cues.parse(Source("report.txt", "loss=0.25 step=3 断点")) == []
    )  # too few ideographs: not a sentence
