"""Metric tables: rows across world sizes feed eta; rows across seeds become comparable series."""

from __future__ import annotations

import pytest

from diagnose.analyzers.scaling import analyze_scaling
from diagnose.probes.artifacts import parse

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
