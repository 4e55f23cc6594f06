"""`scontrol show job -o` fields come from the live_patterns table, as the per-key search they replace did."""

from __future__ import annotations

import re

import pytest

from diagnose.probes.live.fanout import demux_labels, scontrol_fields

LINES = [
    "JobId=1234 JobName=train UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=1 Nice=0 "
    "Account=(null) QOS=normal JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 "
    "BatchFlag=1 ExitCode=0:0 RunTime=00:01:02 TimeLimit=01:00:00 Partition=gpu NodeList=gpu[01-02] "
    "BatchHost=gpu01 NumNodes=2 NumCPUs=16 ReqB:S:C:T=0:0:*:* TRES=cpu=16,mem=64G,node=2 Socks/Node=* "
    "Command=/home/alice/run.sh --lr=3e-4 WorkDir=/home/alice StdErr=/home/alice/slurm-1234.err "
    "StdIn=/dev/null StdOut=/home/alice/slurm-1234.out Power=",
    "JobId=7 JobState=PENDING Reason=Resources NodeList=(null) StdOut=/tmp/out StdErr=None",
    "JobId=8 Comment=see StdOut=x and more JobState=FAILED",
]
KEYS = ("JobId", "JobState", "NodeList", "StdOut", "StdErr", "Command", "TRES", "Reason", "Power", "Comment")


def _old(line: str, key: str) -> str | None:
    m = re.search(rf"(?:^|\s){key}=(.*?)(?=\s+[A-Za-z:/]+=|$)", line)  # regex: the replaced search, as the oracle
    return m.group(1) if m else None


@pytest.mark.parametrize("line", LINES)
def test_fields_as_the_per_key_search_found_them(line: str) -> None:
    fields = scontrol_fields(line)
    assert {k: fields.get(k) for k in KEYS} == {k: _old(line, k) for k in KEYS}
    assert scontrol_fields(LINES[0])["NodeList"] == "gpu[01-02]"


def test_srun_labels_by_task() -> None:
    assert demux_labels("0: a\n  1:b\nno label\n0: c") == {0: ["a", "c"], 1: ["b"]}
