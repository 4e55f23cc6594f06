"""parse_step_lines over the formats users have, the signature examples, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.probes.steptime.probe import parse_step_lines
from diagnose.probes.steptime.spec import label_world, steptime_spec


def _parse(text: str, source: str = "train.log"):
    return parse_step_lines(enumerate(text.splitlines(), 1), source)


def test_every_signature_example_matches_and_no_counter_example_does() -> None:
    spec = steptime_spec()
    assert len(spec.signatures) >= 15
    for sig in spec.signatures:
        assert sig.component == "steptime"
        for ex in sig.examples:
            got = sig.match(ex.line)
            assert got is not None, (sig.name, ex.line)
            for key, want in ex.fields.items():
                assert got.get(key) == pytest.approx(want) if isinstance(want, float) else got.get(key) == want, \
                    (sig.name, ex.line, key, got)
        for line in sig.counter_examples:
            assert sig.match(line) is None, (sig.name, line)


@pytest.mark.parametrize(("line", "want"), [
    ("Epoch 2:  37%|███▋      | 370/1000 [00:41<01:10,  8.93it/s, loss=0.2317, v_num=3]",
     {"epoch": 2, "step": 370, "steps_per_epoch": 1000, "throughput": 8.93, "loss": 0.2317}),
    ("{'loss': 1.0423, 'grad_norm': 3.2, 'learning_rate': 1.9e-05, 'epoch': 1.27}",
     {"loss": 1.0423, "lr": 1.9e-05, "epoch": 1}),
    ("{'train_runtime': 88.1, 'train_samples_per_second': 72.6, 'train_steps_per_second': 2.27, 'epoch': 3.0}",
     {"throughput": 72.6, "step_time": 1 / 2.27}),
    ("step: 40  loss:  5.1090  memory: 31.20GiB(39.31%)  tps: 7,891  tflops: 120.5  mfu: 38.6%",
     {"step": 40, "loss": 5.109, "throughput": 7891.0}),
    ("  88/412 [01:30<05:31,  1.02s/it]", {"step": 88, "steps_per_epoch": 412, "step_time": 1.02}),
    ("iter 120 data_time: 12.5ms step_time: 0.041 loss: 2.2", {"step": 120, "data_time": 0.0125, "step_time": 0.041}),
    ("epoch: 4, lr: 3.20e-04, steps: 800, optimizer: Adam - train loss: 9.1e+01 - valid loss: 4.4e+01",
     {"epoch": 4, "lr": 3.2e-04, "step": 800, "loss": 91.0}),
    ("Compute time per step 9.5ms", {"compute_time": 0.0095}),
    ("Communication time per step 3.1ms", {"comm_time": 0.0031}),
    ("DDP step time (4 GPUs) 14.2ms", {"world_size": 4, "step_time": 0.0142, "distributed": True}),
    ("step   200 | loss: 3.1 | lr 3.0e-04 | norm: 0.9 | dt: 250.50ms | tok/sec: 2093.1",
     {"step": 200, "step_time": 0.2505, "throughput": 2093.1}),
    ("[rank3]: step 7 step_time: 0.2", {"rank": 3, "step": 7, "step_time": 0.2}),
])
def test_formats(line: str, want: dict) -> None:
    (metric,) = _parse(line)
    for key, val in want.items():
        assert getattr(metric, key) == pytest.approx(val), (key, metric)
    assert metric.provenance.line == 1 and metric.provenance.source == "train.log"


def test_valid_loss_is_not_the_training_loss_and_plain_lines_are_ignored() -> None:
    assert _parse("valid loss: 1.2, valid ACC: 0.5\nloading checkpoint shards\nhello world") == []


def test_epoch_wall_times_with_labels_repeat_per_section() -> None:
    text = "_A100_\nbaseline, no DDP: 2 min 10 sec\nbaseline, with DDP: 1 min 5 sec\n_V100_\n" \
           "baseline, no DDP: 4 min 0 sec\nbaseline, with DDP: 2 min 30 sec\n"
    ms = _parse(text, "times.txt")
    assert [m.epoch_time for m in ms] == [130.0, 65.0, 240.0, 150.0]
    assert [m.world_size for m in ms] == [1, None, 1, None]
    assert [m.distributed for m in ms] == [False, True, False, True]
    assert ms[2].run.endswith("#2") and not ms[0].run.endswith("#2")


def test_summary_table_one_metric_per_column() -> None:
    text = "| Metric | 1 GPU | 4 GPUs |\n|---|---|---|\n| step time | 120 ms | 150 ms |\n| data_time | ~0.01 s | 0.09 s |"
    ms = _parse(text)
    assert [(m.run, m.world_size) for m in ms] == [
        ("train.log:1 GPU", 1), ("train.log:4 GPUs", 4), ("train.log:1 GPU", 1), ("train.log:4 GPUs", 4)]
    assert ms[1].step_time == pytest.approx(0.15) and ms[3].data_time == pytest.approx(0.09)


def test_per_rank_batch_prints() -> None:
    ms = _parse("batch [[5], [9]] cuda:0\nbatch [[5], [9]] cuda:1")
    assert [(m.rank, m.batch) for m in ms] == [(0, "[[5], [9]]"), (1, "[[5], [9]]")]


def test_file_name_states_world_size() -> None:
    assert label_world("train_log_8gpu_ddp.txt") == (8, True)
    assert label_world("run-1gpu.log") == (1, False)
    assert label_world("rank3.log") == (None, None)
    (m,) = _parse("epoch: 1, lr: 1e-3, steps: 10", "logs/4gpus.txt")
    assert m.world_size == 4


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=20))
def test_fuzz_never_raises(lines: list[str]) -> None:
    parse_step_lines(enumerate(lines, 1), "fuzz.log")


_TOKENS = st.sampled_from(["step", "loss", ":", "=", " ", "|", "1e999", "0", "-3", "ms", "it/s", "s/it",
                           "data_time", "[", "]", "/", "epoch", "lr", "9" * 5000, "min", "sec", "cuda:1", "batch",
                           "tps", ",", "'", "nan", "inf"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_TOKENS, max_size=30).map("".join), max_size=10))
def test_fuzz_near_formats_never_raises(lines: list[str]) -> None:
    for m in parse_step_lines(enumerate(lines, 1), "fuzz.log"):
        assert m.provenance.source == "fuzz.log"


def test_hf_trainer_fractional_epoch_is_kept() -> None:
    """'epoch': 0.96 keeps its fraction (how far into the epoch the last logged step was); a bare epoch has none."""
    got = _parse("{'loss': 1.5017, 'learning_rate': 0.000137, 'epoch': 0.96}\n"
                 "Epoch 3: 100%|##########| 1563/1563 [01:02<00:00, 25.01it/s, loss=0.45]")
    assert got[0].epoch == 0 and got[0].epoch_progress == pytest.approx(0.96)
    assert got[1].epoch == 3 and got[1].epoch_progress is None
