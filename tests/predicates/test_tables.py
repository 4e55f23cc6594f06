"""The code-table predicate: IB completion statuses map to causes through rules/tables/ib_wc_status.yaml."""

from __future__ import annotations

import pytest

from diagnose.context import Context
from diagnose.errors import RuleError
from diagnose.evidence import LogLine
from diagnose.predicates import REGISTRY
from diagnose.predicates.tables import load_table

ARGS = {"names": ["nccl_ib_completion_error"], "fields": ["status", "error"], "table": "ib_wc_status"}


def _ib(rank: int, **fields) -> LogLine:
    return LogLine(signature="nccl_ib_completion_error", rank=rank, text="NET/IB : Got completion from peer",
                   fields=fields)


def _call(evidence: list, **params):
    return REGISTRY["code_in_table"].func(Context(evidence), **ARGS, **params)


@pytest.mark.parametrize(("fields", "cause", "code"), [
    ({"error": "12"}, "network_timeout", 12),
    ({"status": "12,"}, "network_timeout", 12),
    ({"status": "IBV_WC_WR_FLUSH_ERR(5)"}, "rank_failure", 5),
    ({"status": "IBV_WC_RNR_RETRY_EXC_ERR(13)"}, "rank_failure", 13),
    ({"error": "4"}, "host_config", 4),
])
def test_status_selects_the_cause(fields: dict, cause: str, code: int) -> None:
    b = _call([_ib(1, **fields)], causes=[cause])
    assert b is not None and b.ranks == frozenset({1})
    assert b.fields["code"] == code and b.fields["code_name"].startswith("IBV_WC_")
    others = {"network_timeout", "rank_failure", "host_config", "hardware_fault", "framework_bug"} - {cause}
    assert _call([_ib(1, **fields)], causes=sorted(others)) is None


def test_unknown_or_missing_status() -> None:
    assert _call([_ib(2, error="99")], unknown=True).ranks == frozenset({2})
    assert _call([_ib(2)], unknown=True) is not None
    assert _call([_ib(2, error="12")], unknown=True) is None


def test_bad_table_is_a_located_error(tmp_path) -> None:
    (tmp_path / "broken.yaml").write_text("table: broken\ndescription: x\norigin: [a/b:c]\ncodes:\n  1: {name: X, cause: nope}\n")
    with pytest.raises(RuleError, match="invalid table"):
        load_table("broken", str(tmp_path))
