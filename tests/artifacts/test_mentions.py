"""What a report mentions (probes/artifacts/mentions.py) and how it orders a known symptom's causes."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.commands.logs import run_logs
from diagnose.probes.artifacts import mentions
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import family
from diagnose.rulespec import load_rule_file, rule_dirs, rule_files


def _found(text: str) -> list[tuple[str, str, int | None]]:
    return [(e.component, e.where, e.provenance.line) for e in mentions.parse(Source("report.txt", text))]


def test_a_sentence_and_a_command_line_each_mention_what_they_name() -> None:
    text = (
        "When I train with four GPUs the accuracy is lower than with one GPU.\n"
        "The model has BatchNorm layers after every convolution in the network.\n"
        "torchrun --nproc_per_node 8 train.py --batch-size 2\n"
    )
    found = mentions.parse(Source("report.txt", text))
    assert ("batchnorm", "prose", 2) in _found(text)
    assert ("tiny_batch", "code", 3) in _found(text)
    bn = next(e for e in found if e.component == "batchnorm")
    assert bn.words == "BatchNorm" and bn.text.startswith("The model has")


def test_words_in_a_command_line_are_not_read_as_a_sentence() -> None:
    # nproc_per_node on a launch line says how it was launched, not that the launch is the question
    assert not [
        c
        for c, _, _ in _found("torchrun --nnodes 2 --nproc_per_node 4 --master_port 29500 train.py --lr 0.1")
        if c in ("launch_layout", "endpoint", "batch_and_lr")
    ]


def test_lines_a_program_printed_are_not_mentions() -> None:
    assert (
        _found(
            "node1:12:34 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
            "[rank0]: RuntimeError: the BatchNorm layer failed\n"
        )
        == []
    )


def test_only_the_first_few_lines_of_a_component_are_kept() -> None:
    text = "\n".join(f"self.bn{i} = nn.BatchNorm2d(64)" for i in range(10))
    assert len(_found(text)) == family("mentions").tables["max_per_component"]


@pytest.mark.parametrize(
    "text",
    [
        "I already converted the model with SyncBatchNorm and the accuracy still drops with 8 GPUs.",
        "The model has no BatchNorm at all, only LayerNorm, and it still gets worse with more GPUs.",
    ],
)
def test_a_line_that_rules_batchnorm_out_does_not_mention_it(text: str) -> None:
    assert "batchnorm" not in [c for c, _, _ in _found(text)]


def _rules() -> list:
    return [load_rule_file(p) for p in rule_files(rule_dirs())]


def test_every_component_a_rule_names_is_read_and_every_one_read_is_used() -> None:
    tables = family("mentions").tables["components"]
    named: set[str] = set()
    for rule in _rules():  # a rule names its components in its match or its outcomes' conditions
        for call in [*rule.match, *(c for o in rule.outcomes for c in o.when)]:
            if call.predicate == "mentioned":
                named.update(call.params["components"])
    assert named - set(tables) == set()
    unless = {how["unless"] for how in tables.values() if how.get("unless")}
    assert set(tables) - named == set()
    assert unless <= {p.name for p in family("mentions").patterns}


def _report(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "issue.txt").write_text(text)
    return folder


DIVERGED = "When I train with 4 GPUs instead of 1 the validation accuracy is much lower than before.\n"


def test_a_told_symptom_with_a_mention_puts_the_mentioned_cause_above_the_prior(tmp_path: Path) -> None:
    report = run_logs(
        [_report(tmp_path, DIVERGED + "The network has BatchNorm layers and the batch per GPU is small.\n")],
        symptom="divergence",
    )
    ids = [c.id for c in report.causes]
    assert ids[0] == "batchnorm_sync" and "effective_batch_change" in ids[1:]
    assert report.causes[0].confidence == "low" and report.causes[0].evidence[0].line == 2


def test_code_that_already_syncs_batchnorm_leaves_the_prior_order(tmp_path: Path) -> None:
    text = (
        DIVERGED
        + "The network has BatchNorm layers after each block.\nmodel = nn.SyncBatchNorm.convert_sync_batchnorm(model)\n"
    )
    report = run_logs([_report(tmp_path, text)], symptom="divergence")
    assert report.causes[0].id == "framework_bug"  # the divergence prior's first cause (reported-divergence)
    assert "batchnorm_sync" not in [c.id for c in report.causes[:1]]


def test_an_inferred_symptom_is_ordered_by_the_mentions_too(tmp_path: Path) -> None:
    text = (
        "Training on 2 nodes is not any faster than on one node, the time per epoch is the same.\n"
        "The two machines are connected with 10GbE Ethernet and we have no InfiniBand.\n"
    )
    report = run_logs([_report(tmp_path, text)])
    assert report.symptom == "slow_scaling"
    assert report.causes[0].id == "communication_bound"
    assert any(e.line == 2 for e in report.causes[0].evidence)


def test_the_hyperscan_gate_finds_what_a_search_of_every_component_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (
        DIVERGED + "The network has BatchNorm layers and I use num_workers=0 inside a Docker container.\n"
        "NCCL_SOCKET_IFNAME=eth0 torchrun --nproc_per_node 4 train.py --batch-size 2\n"
        "After resuming, the learning rate starts from the beginning and the keys have a module. prefix.\n"
    )
    gated = [(e.component, e.provenance.line, e.words) for e in mentions.parse(Source("r.txt", text))]
    monkeypatch.setattr(mentions, "hyperscan", None)
    plain = [(e.component, e.provenance.line, e.words) for e in mentions.parse(Source("r.txt", text))]
    assert gated == plain and len(gated) >= 6


def test_the_gate_does_not_drop_a_component_whose_pattern_is_cjk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hyperscan reads bytes: '[个张]卡' would be one byte of a three-byte character there, so a CJK pattern is
    searched without the gate (session 17 found rank_died's Chinese branch never reported through it)."""
    text = "训练到第25轮时卡住\n现在只有一个卡在占用（之前是两个）\n每次保存模型都非常慢\n评估阶段结束之后会直接爆显存\n"
    gated = [(e.component, e.provenance.line) for e in mentions.parse(Source("r.txt", text))]
    assert ("rank_died", 2) in gated and ("slow_saving", 3) in gated and ("evaluation", 4) in gated
    monkeypatch.setattr(mentions, "hyperscan", None)
    assert gated == [(e.component, e.provenance.line) for e in mentions.parse(Source("r.txt", text))]


def test_an_error_line_outranks_any_mention(tmp_path: Path) -> None:
    # the shared-memory bus error decides; the sentence's find_unused_parameters only orders what is below it
    text = (
        "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory.\n"
        "I set find_unused_parameters=True and launch it with torch.distributed.launch on two GPUs.\n"
    )
    report = run_logs([_report(tmp_path, text)], symptom="crash")
    assert report.causes[0].id == "host_config" and report.causes[0].confidence == "high"
    mentioned = next(c for c in report.causes if "crash-mentions-a-component" in c.rules)
    assert mentioned.confidence == "low"


@pytest.mark.parametrize(
    ("text", "component"),
    [
        ("I'm running into a similar issue. RAM is not the problem (using about 10%).", "host_ram"),
        ("局域网的机器，带宽没有问题，多机训练还是很慢", "network"),
        (
            "I think the bottleneck is not on the I/O: the GPU usage is always 96% with 8 workers.",
            "data_loading",
        ),
    ],
)
def test_a_line_that_rules_a_component_out_does_not_mention_it(text: str, component: str) -> None:
    assert component not in [c for c, _, _ in _found(text)]


def test_a_sentence_that_asks_about_set_epoch_still_points_at_the_sampler(tmp_path: Path) -> None:
    # the call quoted in a question is not code that calls it
    text = DIVERGED + "Do I have to call `sampler.set_epoch(epoch)` myself before each epoch?\n"
    report = run_logs([_report(tmp_path, text)], symptom="divergence")
    assert report.causes[0].id == "sampler_misconfig"


def test_a_table_driven_rule_speaks_with_its_first_outcome_that_holds(tmp_path: Path) -> None:
    text = "It crashes at start.\nI launch it with torch.distributed.launch inside a Docker container.\n"
    report = run_logs([_report(tmp_path, text)], symptom="crash")
    assert report.causes[0].id == "host_config"
    assert "launcher_misconfig" not in [
        c.id for c in report.causes if "crash-mentions-a-component" in c.rules
    ]


def test_a_cause_a_log_line_backs_outranks_a_mentioned_one_whatever_their_scores(tmp_path: Path) -> None:
    # an NCCL INFO line that says NCCL fell back to sockets is evidence, damped because it explains no crash; the
    # sentence's Docker mention still ranks below it, above the bare prior
    text = (
        "node1:123:456 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
        "node1:123:456 [0] NCCL INFO Using network Socket\n"
        "The job runs in a Docker container on two nodes and crashes at start.\n"
    )
    report = run_logs([_report(tmp_path, text)], symptom="crash")
    ids = [c.id for c in report.causes]
    mentioned = ids.index("host_config")
    assert all("crash-mentions-a-component" not in c.rules for c in report.causes[:mentioned])
    assert report.causes[0].id != "host_config" and report.causes[0].score < report.causes[mentioned].score


def test_a_latin_term_inside_chinese_text_is_mentioned() -> None:
    """XPixelGroup/BasicSR#322: '发现是BN的问题' names BatchNorm with no space around it; the pattern's word
    boundary holds once the two scripts are read apart, and the Chinese patterns still read the line as written."""
    text = "我用torch.autograd.set_detect_anomaly(True)查询错误，发现是BN的问题。难道是BN内部存在inplace变量的问题吗？\n"
    found = mentions.parse(Source("issue.txt", text))
    bn = [e for e in found if e.component == "batchnorm"]
    assert bn and bn[0].words == "BN" and bn[0].provenance.line == 1
    assert ("gpu0_overloaded", "prose", 1) in _found("只有第一张显卡在跑，其他卡都是空的\n")
