"""The checkpoint tables in rules/tables are validated on load: examples and near misses hold."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from diagnose.probes.checkpoint import patterns
from diagnose.probes.checkpoint.pickle_globals import is_dangerous, is_harmless, load_policy, policy_path


def test_the_shipped_tables_load() -> None:
    load_policy()
    assert patterns.pattern("dcp_shard_file").match("__3_0.distcp").group(1) == "3"
    assert [s for s, _ in patterns.state_key_patterns()][:2] == ["optimizer", "scheduler"]


@pytest.mark.parametrize("qualname", ["torch.distributed.checkpoint.filesystem.io",
                                      "torch.distributed.checkpoint.filesystem.os.system",
                                      "torch.distributed.checkpoint.planner.reduce",
                                      "torch.distributed.checkpoint.pickle"])
def test_module_aliases_and_reexports_are_dangerous_not_harmless(qualname: str) -> None:
    assert is_dangerous(qualname) and not is_harmless(qualname)


def test_a_wrong_example_fails_the_load(tmp_path: Path) -> None:
    data = yaml.safe_load(policy_path().read_text())
    data["examples"]["harmless"].append("posix.system")
    bad = tmp_path / "pickle_globals.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="posix.system"):
        load_policy(bad)
