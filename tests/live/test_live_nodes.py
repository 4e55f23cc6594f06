"""Merging per-node `hang --local` bundles (the Slurm fan-out), without Slurm: failed nodes, missing ranks."""

from __future__ import annotations

from diagnose.evidence import Provenance, RankEnv, RankStatus, StackSample, dump_evidence
from diagnose.probes.live.fanout import demux_labels, merge_reports


def _node(host: str, ranks: list[int], world: int, elsewhere: list[int], op: str = "all_reduce") -> dict:
    ev: list = []
    for r in ranks:
        prov = Provenance(probe="py-spy", source=f"py-spy dump pid {100 + r}", host=host, pid=100 + r)
        ev.append(RankEnv(rank=r, provenance=prov, variables={"WORLD_SIZE": str(world), "RANK": str(r)}))
        ev.append(StackSample(rank=r, provenance=prov, activity="collective", op=op, text=f"rank {r}: {op}"))
    ev += [RankStatus(rank=r, status="no_evidence", detail="other host", provenance=Provenance(host=host))
           for r in elsewhere]
    return {"evidence": dump_evidence(ev), "notes": [f"found {len(ranks)} rank processes", "probed in 0.2 s"],
            "skipped": [{"source": "/proc/9/environ", "reason": "permission denied"}] if host == "n1" else []}


def test_two_nodes_merge_into_one_view() -> None:
    reports = {"n1": _node("n1", [0, 1], 4, [2, 3]), "n2": _node("n2", [2, 3], 4, [0, 1])}
    evidence, skipped, notes = merge_reports(reports, {})
    assert sorted({e.rank for e in evidence if e.kind == "stack_sample"}) == [0, 1, 2, 3]
    assert not [e for e in evidence if e.kind == "rank_status"]  # "other host" resolved by the other node
    assert skipped[0].source == "/proc/9/environ"
    assert notes == ["n1: found 2 rank processes", "n2: found 2 rank processes"]


def test_failed_node_leaves_no_evidence_ranks_and_a_note() -> None:
    evidence, _, notes = merge_reports({"n1": _node("n1", [0, 1], 4, [2, 3])}, {"n2": "srun: error: n2: timeout"})
    status = {e.rank: (e.status, e.detail, e.provenance.host) for e in evidence if e.kind == "rank_status"}
    assert status == {2: ("no_evidence", "probe failed on n2", "n2"), 3: ("no_evidence", "probe failed on n2", "n2")}
    assert "probe on node n2 failed: srun: error: n2: timeout" in notes


def test_rank_on_no_node_is_missing() -> None:
    reports = {"n1": _node("n1", [0, 1], 4, [2, 3]), "n2": _node("n2", [2], 4, [0, 1])}
    evidence, _, _ = merge_reports(reports, {})
    status = [(e.rank, e.status, e.detail) for e in evidence if e.kind == "rank_status"]
    assert status == [(3, "missing", "not found on any node of the job")]


def test_srun_label_demux() -> None:
    text = '0: {"a":\n1: {"b": 2}\n0:  1}\nsrun: error: n2: task 1: Exited\n'
    assert demux_labels(text) == {0: ['{"a":', ' 1}'], 1: ['{"b": 2}']}


def test_bundle_round_trip_through_stdout_and_folder(tmp_path) -> None:
    from diagnose.probes.live import bundle

    node = _node("n1", [0, 1], 2, [])
    text = bundle.to_json(node["evidence"], node["skipped"], node["notes"])
    assert bundle.from_json(text) == {"evidence": node["evidence"], "skipped": node["skipped"], "notes": node["notes"]}
    bundle.write(tmp_path, node["evidence"], node["skipped"], node["notes"])
    assert bundle.read(tmp_path) == bundle.from_json(text)
    evidence, _, _ = merge_reports({"n1": bundle.read(tmp_path)}, {})
    assert sorted({e.rank for e in evidence if e.kind == "stack_sample"}) == [0, 1]
