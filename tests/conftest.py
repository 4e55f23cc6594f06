"""Tests that run real processes (torch jobs, Slurm) get one rerun: on a loaded 2-core machine a launcher
can tear a peer down before it prints, or a free port can be taken between choosing and binding it.
A test that fails twice still fails."""

import pytest

# what users pasted (corpus inputs) is data, never a test module, whatever its file is called
collect_ignore_glob = ["heldout*/*/input/*", "single_process/*/input/*", "goodruns/*/input/*"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return
    for item in items:
        if item.get_closest_marker("torch") and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1))
