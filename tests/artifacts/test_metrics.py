"""Metric tables: rows across world sizes feed eta; rows across seeds become comparable series."""

from __future__ import annotations

import pytest

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.probes.artifacts import HEAD_BYTES, parse

TABLE = """Throughput we measured (per-GPU batch 32):

| GPUs | throughput (samples/s) | step time (ms) |
|------|-----------------------:|---------------:|
| 1    | 1,000                  | 32             |
| 2    | 1500                   | 42.7           |
| 4    | 2100                   | 61             |
"""


def test_markdown_table_rows_feed_eta() -> None:
    found, _ = parse("bench.md", TABLE)
    steps = [e for e in found if e.kind == "step_metric"]
    assert [(s.world_size, s.throughput) for s in steps] == [(1, 1000.0), (2, 1500.0), (4, 2100.0)]
    assert steps[0].step_time == pytest.approx(0.032) and steps[0].provenance.line == 5
    facts = {(f.name, f.world_size): f for f in analyze_scaling(steps).facts}
    assert facts[("eta", 4)].value == pytest.approx(0.032 / (4 * 0.061), abs=1e-3)
    assert facts[("eta_per_sample", 4)].value == pytest.approx(2100 / (4 * 1000), abs=1e-3)


def test_csv_seeds() -> None:
    found, _ = parse("runs.csv", "seed,accuracy,loss\n1,76.1,0.91\n2,71.3,1.02\n3,75.9,0.93\n")
    series = [e for e in found if e.kind == "metric_series" and e.name == "accuracy"]
    assert [(s.seed, s.values) for s in series] == [(1, (76.1,)), (2, (71.3,)), (3, (75.9,))]


def test_tsv_world_sizes_with_units() -> None:
    found, _ = parse("runs.tsv", "gpus\tstep_time_ms\tloss\n1\t100\t2.1\n8\t140\t2.6\n")
    steps = [e for e in found if e.kind == "step_metric"]
    assert [(s.world_size, s.step_time, s.loss) for s in steps] == [(1, 0.1, 2.1), (8, 0.14, 2.6)]


def test_tables_without_world_size_or_seed_are_not_metrics() -> None:
    found, _ = parse("x.md", "| name | value |\n|---|---|\n| lr | 0.1 |\n| epochs | 3 |\n")
    assert not [e for e in found if e.kind in ("step_metric", "metric_series")]


KEYED = """mIoU on the validation set, same config, only the number of GPUs changed:
1 gpu: 0.7729
2 gpus: 0.7750
4 gpus: 0.7478
8 gpus: 0.5373
"""


def test_results_keyed_by_gpu_count_become_series() -> None:
    found, _ = parse("report.txt", KEYED)
    series = [e for e in found if e.kind == "metric_series"]
    assert [(s.world_size, s.values, s.name) for s in series] == [
        (1, (0.7729,), "metric"), (2, (0.775,), "metric"), (4, (0.7478,), "metric"), (8, (0.5373,), "metric")]
    assert series[3].provenance.line == 5 and series[3].text == "8 gpus: 0.5373"
    assert not [e for e in found if e.kind == "step_metric"]  # an accuracy is not a step measurement


def test_keyed_throughput_with_units_becomes_step_metrics() -> None:
    found, _ = parse("bench.txt", "4GPU max performance : busbw 35GB/s\n8 GPU max performance \uff1abusbw 28GB/s\n"
                                  "8 gpus: 120 ms\n")
    steps = [e for e in found if e.kind == "step_metric"]
    assert [(s.world_size, s.throughput) for s in steps] == [(4, 35.0), (8, 28.0)]  # one step time: no series
    found, _ = parse("epochs.txt", "1 GPU: 49 s per epoch\n4 GPUs: 82 s per epoch\n")
    # the unit must end the line for a keyed result; with a trailing phrase it is prose, read once by the prose parser
    timed = [(e.world_size, e.epoch_time, e.run) for e in found if e.kind != "report_words"]
    assert timed == [(1, 49.0, "epochs.txt: 1 GPU"), (4, 82.0, "epochs.txt: 4 GPUs")]
    found, _ = parse("epochs.txt", "1 GPU (epoch): 49 s\n4 GPUs (epoch): 82 s\n")
    assert [(s.world_size, s.epoch_time) for s in found if s.kind == "step_metric"] == [(1, 49.0), (4, 82.0)]


@pytest.mark.parametrize("text", [
    "using 4 GPUs: 0,1,2,3\nusing 8 GPUs: 0,1,2,3,4,5,6,7\n",   # device lists, not results
    "8 GPUs: NVIDIA H100\n4 GPUs: NVIDIA A100\n",                 # model names
    "8 gpus: 0.5373\n",                                           # one count: nothing to compare
    "8 gpus: 0.53\n4 gpus: 12 widgets\n",                         # a unit that names no measure
])
def test_keyed_lines_that_are_not_results(text: str) -> None:
    found, _ = parse("notes.txt", text)
    assert not [e for e in found if e.kind in ("metric_series", "step_metric")]


def test_long_log_is_read_at_its_head_and_tail_with_file_line_numbers() -> None:
    """A long log: its launch command (head) and its final results table (tail) are read, the middle is not."""
    filler = [f"node1:123:456 [0] NCCL INFO Channel {i % 32:02d}/0 : 0[0] -> 1[1] via P2P/IPC" for i in range(40_000)]
    middle = len(filler) // 2
    lines = ["torchrun --nnodes 1 --nproc-per-node 4 train.py", *filler[:middle], TABLE, *filler[middle:],
             *TABLE.splitlines()]
    text = "\n".join(lines) + "\n"
    assert len(text) > 2 * HEAD_BYTES
    found, notes = parse("train.log", text)
    launches = [e for e in found if e.kind == "launch_spec"]
    assert [(e.procs_per_node, e.provenance.line) for e in launches] == [(4, 1)]
    steps = [e for e in found if e.kind == "step_metric"]
    table_top = len(text.splitlines()) - len(TABLE.splitlines()) + 1
    assert [(s.world_size, s.provenance.line) for s in steps] == [(1, table_top + 4), (2, table_top + 5),
                                                                   (4, table_top + 6)]
    assert text.splitlines()[steps[0].provenance.line - 1].startswith("| 1 ")
    assert any("first 1 MiB and last 256 KiB" in n for n in notes)


# sclite's report (ESPnet, Kaldi and WeNet recipes print it) pasted once per run under a line naming the GPU count:
# one Markdown cell holds several columns aligned with spaces
SCLITE_PER_RUN = """`ngpu=1`
```
| SPKR                         | # Snt # Wrd | Corr    Sub    Del    Ins    Err  S.Err |
| Sum/Avg                      |12612  89635 | 75.7   18.1    6.3    2.8   27.1   57.9 |
```

`ngpu=2`
```
| SPKR                         | # Snt # Wrd | Corr    Sub    Del    Ins    Err  S.Err |
| Sum/Avg                      |12612  89635 | 62.7   27.6    9.8    3.8   41.1   64.8 |
```
"""


def test_tables_labelled_by_a_gpu_count_line_become_series_across_world_sizes() -> None:
    found, _ = parse("wer.txt", SCLITE_PER_RUN)
    errors = [e for e in found if e.kind == "metric_series" and e.name == "err"]
    assert [(s.world_size, s.values, s.provenance.line) for s in errors] == [(1, (27.1,), 4), (2, (41.1,), 10)]


def test_a_tables_own_world_size_column_wins_over_a_label_above_it() -> None:
    found, _ = parse("bench.md", "8 GPUs\n| GPUs | samples/s |\n|---|---|\n| 1 | 100 |\n| 8 | 400 |\n")
    assert [(s.world_size, s.throughput) for s in found if s.kind == "step_metric"] == [(1, 100.0), (8, 400.0)]


def test_a_header_cell_with_two_spaces_still_reads_rows_that_do_not_split() -> None:
    found, _ = parse("bench.md", "| GPUs | step time  (ms) |\n|---|---|\n| 1 | 100 |\n| 4 | 130 |\n")
    assert [(s.world_size, s.step_time) for s in found if s.kind == "step_metric"] == [(1, 0.1), (4, 0.13)]


def test_a_label_line_does_not_make_a_table_without_measures_a_metric_table() -> None:
    found, _ = parse("x.md", "With 4 GPUs:\n| name | value |\n|---|---|\n| lr | 0.1 |\n")
    assert not [e for e in found if e.kind in ("step_metric", "metric_series")]


def test_result_columns_named_as_the_reference_scripts_print_them() -> None:
    # torchvision's reference scripts print Acc@1, timm top1, mmdetection bbox mAP: a results table in any of them,
    # keyed by the number of GPUs, is a series per world size
    table = "| # of GPUs | batch size | top-1 acc | bbox mAP |\n|---|---|---|---|\n| 1 | 64 | 76.1 | 40.2 |\n" \
            "| 8 | 64 | 74.9 | 38.0 |\n"
    found, _ = parse("results.md", table)
    series = sorted((e.name, e.world_size, e.values) for e in found if e.kind == "metric_series")
    assert ("top-1 acc", 8, (74.9,)) in series and ("bbox map", 1, (40.2,)) in series


def test_an_empty_result_cell_gives_no_value_for_its_column() -> None:
    # the 8-GPU run has no mAP yet: its row reports top-1 only, not the top-1 value again under the mAP's name
    table = "| GPUs | top-1 acc | bbox mAP |\n|---|---|---|\n| 1 | 76.1 | 40.2 |\n| 8 | 74.9 |  |\n"
    found, _ = parse("results.md", table)
    series = sorted((e.name, e.world_size, e.values) for e in found if e.kind == "metric_series")
    assert ("top-1 acc", 8, (74.9,)) in series and ("bbox map", 1, (40.2,)) in series
    assert not [s for s in series if s[0] == "bbox map" and s[1] == 8]
