"""Overhead of `diagnose.step()` in a training loop, against an empty function call (pytest-benchmark).

Run with `--benchmark-enable`; the table's group "hook-step" gives both in one run (the
ratio is in parentheses), each round being 1000 calls.
"""

from __future__ import annotations

import pytest

import diagnose

CALLS = 1000


def _empty() -> None:
    pass


class _Baseline:
    step = staticmethod(_empty)


def _loop(target) -> None:
    for _ in range(CALLS):
        target.step()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    diagnose.install(report_dir=tmp_path_factory.mktemp("reports"), watchdog_timeout=600)
    yield
    from diagnose.hook.api import uninstall

    uninstall()


@pytest.mark.benchmark(group="hook-step")
@pytest.mark.parametrize("which", ["empty_function", "diagnose_step"])
def test_step_overhead(benchmark, installed, which):
    target = _Baseline if which == "empty_function" else diagnose
    before = diagnose.hook.api._steps
    benchmark(_loop, target)
    if which == "diagnose_step":
        assert diagnose.hook.api._steps - before >= CALLS  # the counter moved: the watchdog sees progress
