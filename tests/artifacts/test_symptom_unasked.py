"""`diagnose logs` names the symptom from what the artifacts are (issue 11, item 5) and cites them;
stronger evidence of another symptom wins; the "next time" line names the missing artifact."""

from __future__ import annotations

import shutil
from pathlib import Path

from diagnose.commands.logs import run_logs

FIXTURES = Path(__file__).parent / "fixtures"

THROUGHPUT = ("| GPUs | throughput (samples/s) |\n|---|---|\n| 1 | 1000 |\n| 2 | 1400 |\n| 4 | 1900 |\n"
              "| 8 | 2300 |\n")
SEEDS = "seed,accuracy\n1,76.1\n2,71.3\n3,75.9\n"
OOM = ("Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.50 GiB is free.\n")


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_throughput_table_is_a_scaling_question(tmp_path: Path) -> None:
    report = run_logs([_folder(tmp_path, {"numbers.txt": THROUGHPUT})])
    assert report.symptom == "slow_scaling"
    assert report.causes[0].id == "communication_bound"
    assert any((e.source or "").endswith("numbers.txt") for e in report.causes[0].evidence)
    assert "eta" in report.causes[0].summary
    assert any("nvidia-smi topo -m" in step for step in report.next)  # what would separate the causes


def test_seed_results_are_a_divergence_question(tmp_path: Path) -> None:
    report = run_logs([_folder(tmp_path, {"runs.csv": SEEDS})])
    assert report.symptom == "divergence" and report.causes[0].id == "nondeterminism"
    assert any("seed" in step or "3 or more seeds" in step for step in report.next)


def test_batch_script_alone_is_a_startup_question(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "docs/sbatch_job.sh", tmp_path / "job.txt")
    report = run_logs([tmp_path])
    assert report.symptom == "hang_at_startup"
    top = report.causes[0]
    assert top.id == "launcher_misconfig" and "launch-batch-script-without-srun" in top.rules
    assert top.evidence[0].line == 2 and "--nodes=2" in (top.evidence[0].text or "")
    assert any("sbatch script" in step for step in report.next)


def test_strong_evidence_wins_over_the_artifact_kind(tmp_path: Path) -> None:
    scales_well = "| GPUs | throughput (samples/s) |\n|---|---|\n| 1 | 1000 |\n| 2 | 1950 |\n| 4 | 3900 |\n"
    report = run_logs([_folder(tmp_path, {"numbers.txt": scales_well, "rank0.log": OOM})])
    assert report.symptom == "oom" and report.causes[0].id == "per_rank_batch_too_large"
    assert "reported-slow-scaling" not in {r for c in report.causes for r in c.rules}


def test_told_symptom_is_kept(tmp_path: Path) -> None:
    report = run_logs([_folder(tmp_path, {"numbers.txt": THROUGHPUT})], symptom="diverged")
    assert report.symptom == "divergence"


def test_pcie_topology_with_slow_interconnect_names_the_link(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "docs/topo_pcie.txt", tmp_path / "topo.txt")
    shutil.copy(FIXTURES / "docs/nccl_tests.txt", tmp_path / "bench.txt")
    report = run_logs([tmp_path])
    assert report.symptom == "slow_scaling"
    top = report.causes[0]
    assert top.id == "communication_bound"
    assert {"system-topology-without-nvlink", "system-interconnect-bandwidth-low"} <= set(top.rules)


def test_versions_differ_between_two_nodes_collect_env(tmp_path: Path, fixture_text) -> None:
    env = fixture_text("real/collect_env.txt")
    (tmp_path / "node1.txt").write_text(env)
    (tmp_path / "node2.txt").write_text(env.replace("PyTorch version: 2.13.0+cpu", "PyTorch version: 2.12.1+cpu"))
    report = run_logs([tmp_path])
    assert report.causes and report.causes[0].id == "version_mismatch"
    assert "2.12.1+cpu vs 2.13.0+cpu" in report.causes[0].summary


def test_results_keyed_by_gpu_count_are_a_divergence_question(tmp_path: Path) -> None:
    text = "1 gpu: 0.7729\n2 gpus: 0.7750\n4 gpus: 0.7478\n8 gpus: 0.5373\n"
    report = run_logs([_folder(tmp_path, {"miou.txt": text})])
    assert report.symptom == "divergence"
    assert {"effective_batch_change", "batchnorm_sync"} <= {c.id for c in report.causes[:3]}
    assert any((e.source or "").endswith("miou.txt") for e in report.causes[0].evidence)


# torchrun's documented multi-node form (https://pytorch.org/docs/stable/elastic/run.html), one line per node
TWO_NODE_TORCHRUN = ("torchrun --nnodes=2 --nproc-per-node=8 --rdzv-id=100 --rdzv-backend=c10d "
                     "--rdzv-endpoint=node0:29400 train.py\n"
                     "torchrun --nnodes=2 --nproc-per-node=8 --rdzv-id=100 --rdzv-backend=c10d "
                     "--rdzv-endpoint=node0:29400 train.py\n")


def test_launch_lines_do_not_count_as_output_of_a_run(tmp_path: Path) -> None:
    # --nproc-per-node matched inside the command file describes the launch; nothing ran
    report = run_logs([_folder(tmp_path, {"commands.sh": TWO_NODE_TORCHRUN})])
    assert report.symptom == "hang_at_startup"
    assert "nothing that ran" in (report.causes[0].evidence[0].text or "")


def test_output_in_another_file_is_a_run(tmp_path: Path) -> None:
    # a rank's console next to the commands: something ran, so the commands alone no longer name the symptom
    ran = ("node0:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
           "node0:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n")
    report = run_logs([_folder(tmp_path, {"commands.sh": TWO_NODE_TORCHRUN, "rank0.log": ran})])
    assert report.symptom != "hang_at_startup"
    assert not any("nothing that ran" in (e.text or "") for c in report.causes for e in c.evidence)


def test_a_sentence_beside_the_launch_outranks_the_launch_alone(tmp_path: Path) -> None:
    # a sentence no cue reads still says more than the launch: the wording guess speaks, not "nothing that ran"
    said = TWO_NODE_TORCHRUN.splitlines()[0] + "\nThis is the command I use on each of the two machines, what should I check?\n"
    report = run_logs([_folder(tmp_path, {"report.txt": said})])
    cited = report.causes[0].evidence[0].text or ""
    assert "wording resembles labelled reports of" in cited and "'nnodes'" in cited
    assert not any("nothing that ran" in (e.text or "") for c in report.causes for e in c.evidence)


# What users wrote in public threads (the signatures' examples in rules/signatures/user_reports.yaml)
REPORTS = [
    ("NCCL_P2P_DISABLE=1 works for me.\n", "hang_at_startup", "host_config"),  # deepspeedai/DeepSpeed#4433
    ("learning rate resets on resumption from checkpoint\n", "resume_mismatch",
     "checkpoint_missing_state"),  # huggingface/transformers#23099
    ("While using Accelerate, it is only utilizing 1 out of the 2 GPUs present.\n", "slow_scaling",
     "launcher_misconfig"),  # huggingface/accelerate#36
    ("The document says the *whole* dataset will pass through each GPU.\n", "slow_scaling",
     "sampler_misconfig"),  # clovaai/voxceleb_trainer#98
    ("The training always freezes after some epochs.\n", "hang_mid_run", None),  # pytorch/pytorch#22671
    ("I'm suspecting that the training is network bound.\n", "slow_scaling",
     "communication_bound"),  # hkust-nlp/simpleRL-reason#63
    ("I stopped training and increased the number of GPU to 24. When I resumed training, there was no change\n",
     "resume_mismatch", "effective_batch_change"),  # huggingface/transformers#22580
    ("My simple code hangs when I use accelerator.prepare (model).\n", "hang_at_startup", None),  # accelerate#1622
]


def test_reported_symptoms_and_causes(tmp_path: Path) -> None:
    for i, (text, symptom, cause) in enumerate(REPORTS):
        folder = tmp_path / str(i)
        folder.mkdir()
        report = run_logs([_folder(folder, {"report.txt": text})])
        assert report.symptom == symptom, text
        if cause:
            assert report.causes[0].id == cause, (text, [c.id for c in report.causes])


def test_a_stuck_loss_is_not_a_hang(tmp_path: Path) -> None:
    """The cue words never read a stuck loss as a hang; the wording guess under them may lean so ('stuck'), and
    then says that it is a guess."""
    report = run_logs([_folder(tmp_path, {"report.txt": "the loss got stuck at 2.3 after 5 epochs\n"})])
    if report.symptom == "hang_mid_run":
        cited = report.causes[0].evidence[0].text or ""
        assert "wording resembles" in cited and "a guess" in cited


def test_log_that_stops_while_the_group_forms_is_a_startup_question(tmp_path: Path) -> None:
    """DeepSpeed's init lines and nothing after them: the processes never got past init_distributed."""
    init = ("[2024-06-11 00:23:36,254] [INFO] [comm.py:637:init_distributed] cdb=None\n"
            "[2024-06-11 00:23:36,254] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed "
            "with backend nccl\n")
    report = run_logs([_folder(tmp_path, {"console.log": init})])
    assert report.symptom == "hang_at_startup"
    ran = init + "{'loss': 2.31, 'learning_rate': 2e-05, 'epoch': 0.01}\n{'loss': 2.12, 'learning_rate': 2e-05, 'epoch': 0.02}\n"
    assert run_logs([_folder(tmp_path, {"console.log": ran})]).symptom != "hang_at_startup"


# Two runs at different world sizes, each with its step time and its loss: both a scaling and a divergence
# question, and the report's words say which one the user asks.
TIME_AND_LOSS = "| GPUs | step time (s) | loss |\n|---|---|---|\n| 2 | 1.80 | 0.935 |\n| 4 | 0.92 | 0.811 |\n"


def test_measurements_that_fit_two_symptoms_take_the_one_the_words_name(tmp_path: Path) -> None:
    worded = run_logs([_folder(tmp_path, {"runs.md": TIME_AND_LOSS,
                                          "report.txt": "The training loss diverges between the two runs.\n"})])
    assert worded.symptom == "divergence"
    (tmp_path / "bare").mkdir()
    bare = run_logs([_folder(tmp_path / "bare", {"runs.md": TIME_AND_LOSS})])
    assert bare.symptom == "slow_scaling"  # the table alone: the first measured reading, time across world sizes


def test_timings_alone_are_a_slow_step_question(tmp_path: Path) -> None:
    """Throughput at one world size and nothing else (no loss, no error, no sentence naming a symptom)."""
    timings = "Here's some data I gathered on my computer\nepoch 0: 7.45 it/s\nepoch 1: 7.6 it/s\nepoch 2: 7.6 it/s\n"
    report = run_logs([_folder(tmp_path, {"timings.txt": timings})])
    assert report.symptom == "slow_step" and report.causes[0].id == "input_pipeline_bound"
    assert "step times or throughput at one world size" in report.causes[0].summary
    with_loss = "epoch 0: 7.45 it/s loss 2.31\nepoch 1: 7.6 it/s loss 2.02\nepoch 2: 7.6 it/s loss 1.90\n"
    assert run_logs([_folder(tmp_path, {"timings.txt": with_loss})]).symptom != "slow_step"


def test_a_rule_of_several_symptoms_takes_the_one_the_report_names(tmp_path: Path) -> None:
    """launch-procs-fewer-than-script-gpus fits slow scaling, a start-up hang and an OOM: the user's own words
    pick which one the cause (and the report) names."""
    command = "torchrun train.py --config c.yaml --train --gpu 0,1,2,3,4,5,6,7\n"
    said = {"hang": "The multi gpu training will hang on the first gpu initialization with this command\n",
            "oom": "With this command it runs out of memory: CUDA out of memory on every GPU\n"}
    want = {"hang": "hang_at_startup", "oom": "oom"}
    for key, sentence in said.items():
        folder = tmp_path / key
        folder.mkdir()
        report = run_logs([_folder(folder, {"r.txt": sentence + command})])
        launch = next(c for c in report.causes if c.id == "launcher_misconfig")
        assert launch.symptom == want[key] == report.symptom, (key, report)
        assert any("nproc-per-node" in c.summary for c in report.causes[:3] if c.id == "launcher_misconfig")


# the console of yolov5 issue 3364 (torch 1.8.1): the user writes that it gets stuck as the first epoch starts, and
# rank 0's DDP reducer already printed the line it prints after the first backward pass
STUCK_AFTER_FIRST_ITERATION = (
    "I have been trying to run the code on multiple gpus, but it get stuck as soon as it starts with first epoch.\n"
    "     Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n"
    "     0/299     8.79G    0.1024   0.02105   0.06316    0.1866         2       640"
    "Reducer buckets have been rebuilt in this iteration.\n")


def test_a_startup_hang_in_words_is_mid_run_once_an_iteration_finished(tmp_path: Path) -> None:
    (tmp_path / "log").mkdir()
    (tmp_path / "words").mkdir()
    report = run_logs([_folder(tmp_path / "log", {"issue.txt": STUCK_AFTER_FIRST_ITERATION})])
    assert report.symptom == "hang_mid_run"
    said = STUCK_AFTER_FIRST_ITERATION.splitlines()[0]
    report_without = run_logs([_folder(tmp_path / "words", {"issue.txt": said})])
    assert report_without.symptom == "hang_at_startup"  # the words alone say start-up


UNEXPLAINED_CRASH = (
    "[rank1]: Traceback (most recent call last):\n"
    "[rank1]:   File \"/home/me/train.py\", line 40, in <module>\n"
    "[rank1]:     trainer.fit(model)\n"
    "[rank1]:   File \"/opt/conda/lib/python3.10/site-packages/somelib/trainer.py\", line 12, in fit\n"
    "[rank1]:     self._run()\n"
    "[rank1]: RuntimeError: the run stopped\n")


def test_a_crash_only_a_weak_finding_shows_gets_the_crash_rows_causes_blind(tmp_path: Path) -> None:
    # the words may not name a crash ('error' is in every report), so the exception's own symptom applies the runbook
    # row, as --symptom crash would: the rank that raised stays first, the row's likeliest causes follow
    blind = run_logs([_folder(tmp_path, {"rank1.log": UNEXPLAINED_CRASH})])
    told = run_logs([tmp_path], symptom="crash")
    assert blind.symptom == "crash" and blind.causes[0].id == "rank_failure" and blind.causes[0].ranks == [1]
    assert [c.id for c in blind.causes[:3]] == [c.id for c in told.causes[:3]]
    assert blind.causes[1].id == "framework_bug" and "the evidence of rank_failure" in \
        blind.causes[1].summary


def test_training_ran_counts_distinct_steps_not_the_lines_every_rank_prints(tmp_path: Path) -> None:
    # two ranks print the same two steps: two steps ran (four records), and the basis says two
    steps = "".join(f"[rank{r}]:[titan] 2026-06-01 13:33:5{s},903 - root - INFO - step: {s}  loss:  3.0{s}  grad_norm:"
                    f"  0.7\n" for s in (1, 2) for r in (0, 1))
    report = run_logs([_folder(tmp_path, {"issue.txt": STUCK_AFTER_FIRST_ITERATION.splitlines()[0] + "\n" + steps})])
    assert report.symptom == "hang_mid_run"
    cited = " ".join(e.text for e in report.causes[0].evidence)
    assert "training ran (2 logged steps)" in cited, cited
