"""Rank ranges and per-rank report names are parsed by plain code, as the regexes they replace did."""

from __future__ import annotations

import re

import pytest

from diagnose.evidence import expand_ranks
from diagnose.hook.reportfile import parse_report_name, report_path

OLD_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")  # regex: the replaced pattern, as the oracle
OLD_NAME = re.compile(r"^rank-(\d+)(?:\.attempt-(\d+))?\.json$")  # regex: the replaced pattern, as the oracle


@pytest.mark.parametrize("part", ["3", " 3 ", "2-5", "2 - 5", "7-7", "-3", "3-", "3-4-5", "+3", "a", "", " ", "3 4",
                                  "\u0663", "10-2"])
def test_rank_ranges_as_before(part: str) -> None:
    m = OLD_RANGE.match(part)
    if m is None:
        with pytest.raises(ValueError):
            expand_ranks(part)
    elif int(m.group(2) or m.group(1)) < int(m.group(1)):
        with pytest.raises(ValueError, match="backwards"):
            expand_ranks(part)
    else:
        assert expand_ranks(part) == list(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))


@pytest.mark.parametrize("name", ["rank-0.json", "rank-12.attempt-3.json", "rank-.json", "rank-3.attempt-.json",
                                  "rank-3.json.json", "rank-x.json", "rank-3.attempt-2.json.tmp", ".rank-3.json",
                                  "rank-3.attempt-1.attempt-2.json", "rank-3.JSON"])
def test_report_names_as_before(name: str) -> None:
    m = OLD_NAME.match(name)
    assert parse_report_name(name) == ((int(m.group(1)), int(m.group(2) or 0)) if m else None)


def test_written_names_parse_back(tmp_path) -> None:
    assert parse_report_name(report_path(tmp_path, 5, 0).name) == (5, 0)
    assert parse_report_name(report_path(tmp_path, 5, 2).name) == (5, 2)
