"""Unit tests of the preflight predicate (diagnose/predicates/preflight.py)."""

from __future__ import annotations

from diagnose.context import Context
from diagnose.evidence import HostCheck, Provenance
from diagnose.predicates.preflight import host_check


def _check(name: str, status: str, host: str | None = "node1", detail: str = "d") -> HostCheck:
    return HostCheck(name=name, status=status, detail=detail, text=f"{status} {name}",
                     provenance=Provenance(probe="preflight", host=host))


def test_a_failed_check_binds_its_detail_and_host() -> None:
    ctx = Context([_check("dev_shm_size", "fail", detail="/dev/shm is 64 MiB"), _check("memlock", "pass")])
    found = host_check(ctx, ["dev_shm_size", "memlock"])
    assert found is not None
    assert found.fields["check"] == "dev_shm_size" and found.fields["detail"] == "/dev/shm is 64 MiB"
    assert found.fields["hosts"] == "node1" and found.fields["count"] == 1


def test_failures_on_several_hosts_name_each_host() -> None:
    ctx = Context([_check("env_agree", "fail", "node1", "NCCL 2.18"), _check("env_agree", "fail", "node2", "NCCL 2.21")])
    found = host_check(ctx, ["env_agree"])
    assert found.fields["hosts"] == "node1, node2"
    assert found.fields["detail"] == "node1: NCCL 2.18; node2: NCCL 2.21"


def test_status_is_matched_exactly() -> None:
    ctx = Context([_check("rdzv_port", "skip")])
    assert host_check(ctx, ["rdzv_port"]) is None
    assert host_check(ctx, ["rdzv_port"], status="skip") is not None
    assert host_check(Context([]), ["rdzv_port"]) is None
