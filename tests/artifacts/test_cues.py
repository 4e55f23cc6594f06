"""The symptom a report's sentences describe (probes/artifacts/cues.py), on sentences from public threads."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.probes.artifacts import cues, mentions
from diagnose.probes.artifacts.source import Source

REPORTS = [
    # https://discuss.huggingface.co/t/transformer-model-parallel-does-not-work-with-pytorch-ddp-for-multi-node-training/22375
    ("The naive model parallelism in Transformer models such as T5 does not work with pytorch Distributed Data "
     "Parallel for multi-node training. It will freeze at the step of torch.nn.parallel.DistributedDataParallel(Model).",
     "hang_at_startup", "freeze at the step of torch.nn.parallel"),
    # https://discuss.pytorch.org/t/training-hangs-on-loss-backward-with-ddp-nnodes-2-nproc-per-node-3/220127
    ("Training hangs on loss.backward() with DDP --nnodes=2 --nproc_per_node=3", "hang_mid_run", "hangs"),
    # https://github.com/verl-project/verl/issues/2579 (a throughput measure per GPU that falls with nodes)
    ("Hi, I'm trying using 2-node training. But the mfu for updating actor is several times lower than that of a "
     "single node (0.17 for 2 nodes and 0.5 for sinlge node).", "slow_scaling", "mfu for updating actor"),
    # https://github.com/lichengunc/MAttNet/issues/31 (the input pipeline costs more than the model)
    ("When I'm training the model, in every iteration, data-loading takes about 3s while the model part only "
     "takes 0.3s.", "slow_step", "data-loading takes"),
    # https://github.com/NVIDIA/DALI/issues/5335 (a loss that oscillates with the number of GPUs)
    ("I found that the inference loss and inference IOU of the training were both oscillatory, and this "
     "oscillation was periodic. The oscillation period matches the number of GPUs I have used.", "divergence",
     "oscillat"),
    # speechbrain/speechbrain#1082 (a mention component read as a cue: one GPU holds the work, the rest stay empty)
    ("Recently, I use multiple gpu to train on the Sepformer, but I find that the memory usage can only be arranged "
     "on the first gpu, leaving the followings empty. As a result, the batch size cannot be increased.",
     "slow_scaling", "only be arranged on the first gpu, leaving the"),
    # pytorch/pytorch#30509 (the bits of the reduced gradients change with a DDP setting)
    ("when I use funtion as below and change bucket_cap_mb form 20 to 25, the md5 of my grad has change, is there "
     "any one can explain about this?", "divergence", "md5 of my grad has change"),
]


@pytest.mark.parametrize(("text", "symptom", "cue"), REPORTS)
def test_a_report_sentence_names_its_symptom(text: str, symptom: str, cue: str) -> None:
    (found,) = cues.parse(Source("report.txt", text))
    assert found.symptom == symptom and cue in found.basis and found.provenance.line == 1


@pytest.mark.parametrize("text", [
    "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 ms.",
    "RuntimeError: the training hangs and then it crashes with an error",       # printed, not written
    "I trained the model and it works fine, thanks for the great repository!",  # no symptom words
    "The memory usage looks fine to me and the loss goes down as expected here.",  # one weak cue: too little
])
def test_log_lines_and_unclear_reports_name_nothing(text: str) -> None:
    assert cues.parse(Source("report.txt", text)) == []


def test_words_that_need_several_gpus_count_only_in_a_multi_gpu_report() -> None:
    one = cues.parse(Source("a.txt", "Training is much slower than I expected and it takes too long per epoch."))
    many = cues.parse(Source("b.txt", "Training on 4 GPUs is not any faster than on one, the time per epoch is the same."))
    assert [e.symptom for e in one] == ["slow_step"] and [e.symptom for e in many] == ["slow_scaling"]


def test_an_absolute_duration_is_a_slow_step_unless_the_report_compares_device_counts() -> None:
    """'contrast: false': a duration or rate with nothing set against it is the step's own slowness, whatever the
    number of GPUs; the same words beside a one-GPU figure are a scaling comparison."""
    alone = cues.parse(Source("a.txt", "It takes around 2 hours 30 mins for a single epoch with 6 V100 GPUs."))
    eta = cues.parse(Source("e.txt", "On 8 GPUs the ETA is shown as approx 30 days."))
    compared = cues.parse(Source("c.txt", "With 1 GPU an epoch takes 2 hours, with 4 GPUs an epoch takes 1.5 hours."))
    assert [e.symptom for e in alone] == ["slow_step"] and "2 hours 30 mins" in alone[0].basis
    assert [e.symptom for e in eta] == ["slow_step"]
    assert [e.symptom for e in compared] == ["slow_scaling"]


def test_after_a_resume_the_loss_jump_is_the_resume_symptom() -> None:
    (found,) = cues.parse(Source("r.txt", "After resuming from the checkpoint, the loss jumps back up to where it started."))
    assert found.symptom == "resume_mismatch"


def test_a_symptom_only_just_ahead_is_named_with_its_runner_up() -> None:
    (found,) = cues.parse(Source("r.txt", "The loss goes to NaN after a while and then the job crashes with an error on one GPU."))
    assert found.symptom == "divergence" and "ahead of crash" in found.basis and "not clearly" in found.basis


def test_the_engine_uses_it_only_when_no_rule_fired(tmp_path: Path) -> None:
    report_dir = tmp_path / "r"
    report_dir.mkdir()
    (report_dir / "issue.txt").write_text(REPORTS[1][0] + "\n")  # no report signature says it: only cue words
    report = run_logs([report_dir])
    assert report.symptom == "hang_mid_run"
    assert report.causes and report.causes[0].confidence == "low"
    assert "the report's own words" in report.causes[0].summary


# Korean and Japanese reports (the vocabulary of each symptom, written for this test): a sentence in Hangul or
# kana is read as prose, and its words name the symptom; "단일 GPU" / "1枚" are the one-GPU side of a comparison.
@pytest.mark.parametrize(("text", "symptom"), [
    ("멀티 GPU로 학습하면 단일 GPU와 속도가 비슷합니다", "slow_scaling"),
    ("DDP 학습 중 메모리 부족 에러가 발생합니다", "oom"),
    ("체크포인트에서 학습을 재개하면 loss가 달라집니다", "resume_mismatch"),
    ("4枚のGPUで学習すると途中で止まってしまいます", "hang_mid_run"),
    ("複数GPUで学習すると精度が下がります", "divergence"),
])
def test_korean_and_japanese_sentences_name_their_symptom(text: str, symptom: str) -> None:
    (found,) = cues.parse(Source("report.txt", text))
    assert found.symptom == symptom


@pytest.mark.parametrize(("text", "symptom"), [
    # slowness of the step itself, stated as a measure with nothing to compare it with
    ("Each run gives 12.5 ms per training step on the 8-GPU node.", "slow_step"),
    ("The iteration time keeps increasing as training goes on.", "slow_step"),
    ("Epoch times vary from 40 to 120 seconds on the same machine.", "slow_step"),
    ("训练10个steps需要15分钟", "slow_step"),
    # a multi-node run called slow: the network between the nodes comes first
    ("Training on two nodes is extremely slow with ZeRO-3.", "slow_scaling"),
    # a typed contraction without its apostrophe
    ("Training doesnt get any faster with 4 GPUs than with 1 GPU.", "slow_scaling"),
    # a hang placed in the run: before validation, after a phase that worked, after several batches (Chinese)
    ("DDP training hangs before the first evaluation.", "hang_mid_run"),
    ("The first few epochs run fine, but then the job gets stuck.", "hang_mid_run"),
    ("训练了几个epoch后卡住不动", "hang_mid_run"),
    # a loss that grows large or never comes down, a loss scaled by a setting, a plateau
    ("The loss becomes very large after a while and never comes down.", "divergence"),
    ("With accumulation the reported loss is multiplied by the number of steps.", "divergence"),
    ("The run plateaued early although the loss looked healthy.", "divergence"),
    ("The job died with a bus error in a data loader worker.", "crash"),
    # families read from short titles: a run that stops by itself, a run stuck at step 0 / 0%, errors that occur,
    # a step that failed to load, a compound loss name, a metric called low or only some value, a restore, a
    # GPU model counted ('two 3090s'), a resume after an interruption (Chinese), memory that is lacking
    ("Training randomly stops after a few hours without any error.", "hang_mid_run"),
    ("The trainer is stuck on step 0.", "hang_at_startup"),
    ("Some errors occur when I launch on two machines.", "crash"),
    ("The job failed to load the tokenizer on rank 3.", "crash"),
    ("My d_loss explodes after the first epoch.", "divergence"),
    ("With 4 GPUs the validation accuracy is very low.", "divergence"),
    ("The accuracy is only 41% on the test set.", "divergence"),
    ("The loss jumps after I restore the optimizer state.", "resume_mismatch"),
    ("Training with two 3090s is slower.", "slow_scaling"),
    ("训练中断后继续训练，loss变大了", "resume_mismatch"),
    ("We lack GPU memory for the 13B model.", "oom"),
    # a resume in Chinese that names the checkpoint it continues from
    ("从上一个检查点继续训练时，发生错误", "resume_mismatch"),
    ("加载checkpoint继续训练时报错 size mismatch", "resume_mismatch"),
    # values a GPU-to-GPU copy or a collective changed: the training's numbers are wrong
    ("Moving a tensor from one GPU to another GPU results in data corruption.", "divergence"),
    ("NCCL2 allreduce nan problem with InfiniBand", "divergence"),
    # a run that 'goes down' (Chinese 挂了 in English): a crash, not a loss going down
    ("I tried multi-GPU training recently, it seems that the training will down at the end of one epoch", "crash"),
])
def test_general_phrasings_name_their_symptom(text: str, symptom: str) -> None:
    (found,) = cues.parse(Source("report.txt", text))
    assert found.symptom == symptom, found


@pytest.mark.parametrize("text", [
    "It is persistent after restarting the server.",  # a restarted machine is no resumed run
    "现在只有一个卡在占用（之前是两个）",  # '一个卡在' is 'one card is', not 'stuck at'
    "使用DistributedDataParallel时出现显卡在nvidia-smi的结果中",  # '显卡在' is 'the graphics card is', no hang
])
def test_a_restarted_server_and_a_busy_card_name_no_resume_or_hang(text: str) -> None:
    assert all(f.symptom not in ("resume_mismatch", "hang_at_startup", "hang_mid_run")
               for f in cues.parse(Source("r.txt", text)))


def test_frozen_parts_of_a_model_are_no_hang() -> None:
    found = cues.parse(Source("r.txt", "We train the adapter with a frozen backbone and frozen embeddings on 8 GPUs."))
    assert all(e.symptom not in ("hang_at_startup", "hang_mid_run") for e in found)


@pytest.mark.parametrize(("text", "symptom"), [
    ("Stuck before training", "hang_at_startup"),                 # huanngzh/EpiDiff#5 (an issue title)
    ("DDP Module training stuck during training", "hang_mid_run"),  # guyuchao/PyramidCSA#14 ('stuck at random epochs')
    ("显存不足", "oom"),  # a Chinese title of a few characters is read too
    ("训练卡死", "hang_mid_run"),
])
def test_a_title_of_a_few_words_is_read_as_prose(text: str, symptom: str) -> None:
    """A source of one to three short lines is a title or a sentence pasted alone: two words are enough there."""
    (found,) = cues.parse(Source("title.txt", text))
    assert found.symptom == symptom and found.provenance.line == 1


@pytest.mark.parametrize("text", [
    "I restored the conda environment and reinstalled torch.",  # a restore that is no checkpoint
    "The script ran to the end without any errors occurring.",  # errors said not to occur
])
def test_near_misses_of_the_title_families_name_nothing(text: str) -> None:
    assert cues.parse(Source("report.txt", text)) == []


def test_a_short_line_inside_a_longer_paste_still_needs_a_sentence() -> None:
    text = "\n".join(["epoch 1 done", "Stuck before training", *[f"loss={i / 10} step={i}" for i in range(5)]])
    assert cues.parse(Source("log.txt", text)) == []


def test_a_loss_that_goes_down_is_no_crash() -> None:
    found = cues.parse(Source("r.txt", "On 4 GPUs the training loss goes down slowly and the accuracy is fine."))
    assert all(e.symptom != "crash" for e in found)


def test_a_loss_that_goes_down_again_is_no_crash() -> None:
    text = "After a while it goes down again, but the training process is set back by a large margin."
    assert all(e.symptom != "crash" for e in cues.parse(Source("r.txt", text)))


def test_an_issue_form_line_is_not_the_users_words() -> None:
    """QwenLM/Qwen#970: the bilingual issue form asks about an existing issue 'about this error'; that question and
    its ticked boxes are the template's words, so the report's own words ('progress is very slow') decide."""
    text = ("### 是否已有关于该错误的issue或讨论？ | Is there an existing issue / discussion for this?\n\n"
            "- [X] 我已经搜索过已有的issues和讨论 | I have searched the existing issues / discussions\n\n"
            "### 当前行为 | Current Behavior\n\n发生在微调模型的时候，进度特别慢\n")
    (found,) = cues.parse(Source("issue.txt", text))
    assert found.symptom == "slow_step" and "进度特别慢" in found.basis


def test_a_mention_cue_and_an_own_cue_count_the_same_words_once() -> None:
    """'only uses one GPU' is read by a slow_scaling cue and by the one_gpu_busy mention: one observation, so a
    sentence that only names its single-GPU control stays without a symptom."""
    text = "However, this error does not occur when the script only uses one GPU with the same number of batch for each GPU."
    assert cues.parse(Source("r.txt", text + "\n")) == []


def test_a_single_gpu_control_in_the_first_person_is_no_busy_gpu() -> None:
    """'when I only use one GPU' names the control run, not one GPU doing the work of several, and 'this error does
    not occur' reports no error: the sentence (labelled none in tests/prose/sentences.yaml) names no symptom."""
    text = "However, this error does not occur when I only use one GPU with the same number of batch for each GPU."
    assert cues.parse(Source("r.txt", text + "\n")) == []
    assert not [m for m in mentions.parse(Source("r.txt", text + "\n")) if m.component == "one_gpu_busy"]
