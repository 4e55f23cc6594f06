"""The last-resort symptom guess from a report's wording (probes/artifacts/wording.py, rules/artifacts/wording.json):
asked only when nothing else names a symptom, labelled as a guess, current with its labelled texts, and measured
leave-one-corpus-out."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.engine import diagnose_evidence
from diagnose.evidence import ReportWords
from diagnose.probes.artifacts import parse, wording

ROOT = Path(__file__).resolve().parents[2]
WATCHDOG = ("[rank1]:[E1129 10:02:11.340 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
            "Timeout(ms)=600000) ran for 600093 milliseconds before timing out.\n")


def _script():  # noqa: ANN202 - the training script, loaded as a module
    spec = importlib.util.spec_from_file_location("train_wording", ROOT / "scripts/train_wording.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_wording"] = module
    spec.loader.exec_module(module)
    return module


def _report(tmp_path: Path, text: str, **kw: str):  # noqa: ANN202
    (tmp_path / "report.txt").write_text(text, encoding="utf-8")
    return run_logs([tmp_path], **kw)


def test_a_title_no_cue_reads_is_guessed_and_labelled(tmp_path: Path) -> None:
    # lopuhin/transformer-lm#24, the title as written ('muli-gpu'): no cue word reads it
    report = _report(tmp_path, "No speed up when using muli-gpu training\n")
    assert report.symptom == "slow_scaling"
    top = report.causes[0]
    assert top.id == "communication_bound" and top.confidence == "low"
    cited = top.evidence[0].text or ""
    assert "wording resembles labelled reports of slow_scaling" in cited and "'speed'" in cited
    assert "--symptom" in cited  # says it is a guess and how to correct it
    assert any("nvidia-smi topo -m" in step or "GPUs" in step for step in report.next)


def test_a_log_line_a_rule_reads_decides_and_the_wording_is_not_asked(tmp_path: Path) -> None:
    report = _report(tmp_path, "the job hangs after a while, loss was fine\n" + WATCHDOG)
    assert report.symptom == "hang_mid_run"
    assert not any("wording resembles" in (e.text or "") for c in report.causes for e in c.evidence)


def test_a_told_symptom_is_never_replaced(tmp_path: Path) -> None:
    report = _report(tmp_path, "No speed up when using muli-gpu training\n", symptom="diverged")
    assert report.symptom == "divergence"
    assert not any("wording resembles" in (e.text or "") for c in report.causes for e in c.evidence)


def test_too_few_known_words_guess_nothing(tmp_path: Path) -> None:
    report = _report(tmp_path, "xyzzy plugh\n")
    assert report.symptom is None and not report.causes


def test_each_file_gives_its_known_words_once_from_its_head() -> None:
    text = "loss diverges with 8 gpus\n" + "x" * (wording.HEAD_CHARS + 10) + " checkpoint resume\n"
    found = [e for e in parse("r.txt", text)[0] if e.kind == "report_words"]
    assert len(found) == 1
    assert {"loss", "gpus"} <= set(found[0].words) and "resume" not in found[0].words


@pytest.mark.parametrize("blob", [b"\x00\xff" * 50_000, "训练卡住了".encode() * 10, b"a" * 5_000_000])
def test_bad_input_gives_words_or_nothing(blob: bytes) -> None:
    found, _ = parse("blob.bin", blob.decode("utf-8", "replace"))
    for e in found:
        if e.kind == "report_words":
            assert all(w in wording.table().words for w in e.words)


def test_the_shipped_table_is_what_the_labelled_texts_give() -> None:
    assert _script().main(["--check"]) == 0, "rerun scripts/train_wording.py"


def test_the_guess_is_right_on_corpora_it_did_not_count() -> None:
    """Leave one corpus out: right on 1016 of 1500 read reports (0.677) when last measured; the floor is a little
    under it. The cue words alone, on the reports no session had read, named the right symptom in 0.57."""
    train = _script()
    scores = train.cross_validate(train.texts(train.HELD_OUT))
    right, total = (sum(x) for x in zip(*scores.values(), strict=True))
    assert total >= 900 and right / total >= 0.65
    # no broad failure on whole corpora (a corpus of a few texts is noise: 0 of 3 says nothing)
    assert sum(1 for r, t in scores.values() if t >= 10 and r / t < 0.4) <= 2


def test_a_guess_names_the_words_that_lean_to_it() -> None:
    got = wording.guess([ReportWords(words=("loss", "nan", "diverges", "gpus"))])
    assert got is not None and got.symptom == "divergence"
    assert "'nan'" in got.basis or "'diverges'" in got.basis


@pytest.mark.parametrize("command", ["hang", "record", "preflight", "report"])
def test_only_a_post_mortem_read_guesses(command: str) -> None:
    """A live hang, the run record (whose facts are never guessed), a preflight and the merged hook reports never
    take a symptom from wording; `diagnose logs` does."""
    found, _ = parse("report.txt", "No speed up when using muli-gpu training\n")
    assert diagnose_evidence(found, command="logs").symptom == "slow_scaling"
    report = diagnose_evidence(found, command=command)
    assert report.symptom is None and not report.causes


def test_rules_check_reports_a_broken_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "wording.json").write_text('{"description": "x", "words": {}}', encoding="utf-8")
    monkeypatch.setattr(wording, "artifacts_dir", lambda: tmp_path)
    (problem,) = wording.check_table()
    assert "wording.json" in problem
    monkeypatch.undo()
    assert wording.check_table() == []


def test_a_bare_hang_word_takes_its_timing_from_the_wording(tmp_path: Path) -> None:
    # a hang word that says nothing of when (cues.yaml's fallback cue): the wording picks start-up or mid-run
    late = _report(tmp_path, "Multi-GPU training gets stuck\n")
    assert late.symptom == "hang_mid_run" and late.causes[0].id == "collective_mismatch"
    cited = late.causes[0].evidence[0].text or ""
    assert "'stuck'" in cited and "which of hang_at_startup or hang_mid_run" in cited
    assert "wording resembles labelled reports of hang_mid_run" in cited
    early = _report(tmp_path, "dist.init hangs forever\n")
    assert early.symptom == "hang_at_startup" and early.causes[0].id == "nccl_setup"


def test_a_close_guess_names_the_runner_up_symptoms_first_cause_second(tmp_path: Path) -> None:
    report = _report(tmp_path, "DDP hangs.\n")
    first, second = report.causes[:2]
    assert report.symptom == "hang_mid_run" and first.id == "collective_mismatch" and first.score == 0.3
    assert second.id == "nccl_setup" and second.score == 0.15  # the start-up reading, at half the score
    assert "runner-up to hang_mid_run" in second.summary
    assert len({c.id for c in report.causes}) == len(report.causes)


def test_a_clear_guess_names_no_runner_up(tmp_path: Path) -> None:
    report = _report(tmp_path, "dist.init hangs forever\n")
    assert not any("runner-up" in c.summary for c in report.causes)
    assert [c.id for c in report.causes[:2]] == ["nccl_setup", "framework_bug"]


def test_told_a_hang_the_wording_settles_nothing(tmp_path: Path) -> None:
    report = _report(tmp_path, "My DDP training hangs.\n", symptom="hang_at_startup")
    assert report.symptom == "hang_at_startup" and report.causes[0].id == "nccl_setup"
    assert not any("which of" in (e.text or "") or "runner-up" in c.summary for c in report.causes
                   for e in c.evidence)


def test_the_guess_keeps_to_the_candidates_it_is_given() -> None:
    sampled = [ReportWords(words=("loss", "nan", "diverges", "gpus", "hangs"))]
    free = wording.guess(sampled)
    held = wording.guess(sampled, among=("hang_at_startup", "hang_mid_run"))
    assert free is not None and free.symptom == "divergence"
    assert held is not None and held.symptom in ("hang_at_startup", "hang_mid_run")


def test_candidates_the_table_does_not_know_guess_nothing() -> None:
    assert wording.guess([ReportWords(words=("loss", "nan", "hangs"))], among=("not_a_symptom",)) is None


@pytest.mark.parametrize(("text", "symptom"), [
    # speechbrain/speechbrain#2401: checkpointing under DDP, then 'Get a deadlock.' (no word says when)
    ("It's unclear how checkpointing should be used in DDP mode on a single machine with multiple GPUs.\n"
     "Every DDP-worker writes the same checkpoint.\n2. Get a deadlock.\n", "hang_mid_run"),
    # Project-MONAI/MONAI#5357: a sampler that allows non-even division, then 'freezes'
    ("MONAI has a subclass of DistributedSampler which accounts for non-even division, but if I set it to False the"
     " DistributedDataParallel freezes.\n", "hang_mid_run"),
])
def test_a_hang_that_says_not_when_is_placed_by_what_the_report_mentions(tmp_path: Path, text: str,
                                                                          symptom: str) -> None:
    report = _report(tmp_path, text)
    assert report.symptom == symptom
    assert any("comes only once training runs" in (e.text or "") or "comes only once training runs" in c.summary
               for c in report.causes for e in c.evidence)
