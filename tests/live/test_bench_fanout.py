"""Benchmark: the parent's share of a 1,024-rank Slurm fan-out (128 node bundles of 8 ranks): merge, then one engine run.

Each node probes its own 8 ranks in parallel with the others (test_bench_hang.py measures that part);
what grows with the job in one place is this merge and the single diagnosis. Rank 517 sleeps past
the all_reduce the other 1,023 wait in.
"""

from __future__ import annotations

import pytest

from diagnose.engine import diagnose_evidence
from diagnose.evidence import Provenance, RankEnv, RankStatus, StackSample, dump_evidence
from diagnose.probes.live import bundle, merge
from diagnose.probes.live.fanout import merge_reports

NODES, PER_NODE = 128, 8
C10D = "all_reduce (torch/distributed/distributed_c10d.py:3252)"


def _node(n: int) -> str:
    ev: list = []
    for r in range(n * PER_NODE, (n + 1) * PER_NODE):
        prov = Provenance(probe="stacks", source=f"py-spy dump pid {1000 + r}", host=f"node{n}", pid=1000 + r)
        ev.append(RankEnv(rank=r, provenance=prov, variables={"WORLD_SIZE": str(NODES * PER_NODE), "RANK": str(r)}))
        ev.append(RankStatus(rank=r, provenance=prov, status="alive", detail="state=sleeping"))
        for i in (0, 1):
            frames = (("train (train.py:44)",) if r == 517 else (C10D, "train (train.py:40)")) + ("<module> (train.py:60)",)
            ev.append(StackSample(rank=r, provenance=prov, sample=i, frames=frames, call_site=frames[-2].split("(")[1][:-1],
                                  activity="sleeping" if r == 517 else "collective",
                                  op=None if r == 517 else "all_reduce", text=f"rank {r}"))
    return bundle.to_json(dump_evidence(ev), [], [f"found {PER_NODE} rank processes"])


@pytest.fixture(scope="module")
def streams() -> dict[str, str]:
    return {f"node{n}": _node(n) for n in range(NODES)}


def _parent(streams: dict[str, str]):
    evidence, skipped, notes = merge_reports({k: bundle.from_json(v) for k, v in streams.items()}, {})
    return diagnose_evidence(evidence, command="hang", skipped=skipped, notes=notes)


@pytest.mark.benchmark(group="fanout-1024")
def test_bench_parent_merge_and_diagnose_1024_ranks(benchmark, streams) -> None:
    report = benchmark.pedantic(_parent, args=(streams,), rounds=3, iterations=1)
    assert (report.causes[0].id, report.causes[0].ranks) == ("collective_mismatch", [517])
    assert report.ranks.world_size == 1024 and len(report.ranks.seen) == 1024
    one = merge.merge({"node0": bundle.from_json(streams["node0"])})
    assert one.world_size == 1024 and one.unseen()[:2] == [8, 9]  # one node alone: the other ranks unseen
