"""Session-wide launcher: every scenario run the selected tests need starts once, concurrently.

Runs are mostly idle (hangs wait for the PG timeout), so E2E_PARALLEL (default 4) of them share
the 2 cores. Each test then waits only for its own run. Logs stay under pytest's basetemp
(`--basetemp DIR` to keep them somewhere known).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from e2e_cases import split_case  # noqa: E402
from e2e_harness import RunResult, run_scenario  # noqa: E402

_WANTED = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted: list[str] = []
    for item in items:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        if case and item.get_closest_marker("torch") and case not in wanted:
            wanted.append(case)
    config.stash[_WANTED] = wanted


class Runs:
    def __init__(self, base: Path, cases: list[str]) -> None:
        self.base = base
        # slowest (hang) runs first, so they overlap with the fast ones
        order = sorted(cases, key=lambda c: -split_case(c)[0].pg_timeout)
        self.pool = ThreadPoolExecutor(max_workers=int(os.environ.get("E2E_PARALLEL", "4")))
        self.futures: dict[str, Future] = {c: self.pool.submit(self._run, c) for c in order}

    def _run(self, case: str) -> RunResult:
        sc, variant = split_case(case)
        return run_scenario(sc, variant, self.base / case)

    def get(self, case: str) -> RunResult:
        if case not in self.futures:
            self.futures[case] = self.pool.submit(self._run, case)
        return self.futures[case].result()


@pytest.fixture(scope="session")
def e2e_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    runs = Runs(tmp_path_factory.mktemp("e2e"), request.config.stash.get(_WANTED, []))
    yield runs
    runs.pool.shutdown(wait=True, cancel_futures=True)
