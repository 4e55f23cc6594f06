"""The published schema is tight (closed objects, typed sections) and every command's --json output validates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "oom-killed-rank"


def cli_json(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "diagnose", *args, "--json"], capture_output=True, text=True,
                          timeout=180, env={**os.environ})
    assert proc.returncode in (0, 3), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    proc = subprocess.run([sys.executable, "-m", "diagnose", "schema"], capture_output=True, text=True, timeout=120)
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_is_closed_and_typed(validator) -> None:
    schema = validator.schema
    assert schema["$schema"].endswith("2020-12/schema") and schema["$id"] == "diagnose.report/1"
    assert schema["additionalProperties"] is False
    defs = schema["$defs"]
    assert defs["Cause"]["additionalProperties"] is False and defs["EvidenceRef"]["additionalProperties"] is False
    assert "present" in defs["CheckpointSection"]["properties"] and "runs" in defs["ScalingSection"]["properties"]
    assert defs["HostCheck"]["additionalProperties"] is False
    bad = {**cli_json("logs", str(EXAMPLE)), "surprise": 1}
    assert not validator.is_valid(bad)


def test_every_command_output_validates(validator, tmp_path: Path) -> None:
    ckpt = tmp_path / "a.pt"
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "step": 1}, ckpt)
    other = tmp_path / "b.pt"
    torch.save({"model": torch.nn.Linear(2, 3).state_dict()}, other)
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps({"runs": [{"run": "1gpu", "world_size": 1, "local_batch": 32, "step_time": 0.1},
                                         {"run": "8gpu", "world_size": 8, "local_batch": 32, "step_time": 0.2,
                                          "comm_time": 0.1, "compute_time": 0.1}]}))
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "rank-0.json").write_text(json.dumps({"rank": 0, "attempt": 0, "evidence": [
        {"kind": "rank_exit", "rank": 0, "exitcode": -9, "signal": "SIGKILL", "text": "killed"}]}))
    outputs = {
        "logs": cli_json("logs", str(EXAMPLE)),
        "logs --redact": cli_json("logs", str(EXAMPLE), "--redact"),
        "checkpoint": cli_json("checkpoint", str(ckpt)),
        "checkpoint A B": cli_json("checkpoint", str(ckpt), str(other)),
        "scaling": cli_json("scaling", str(runs), str(ROOT / "tests" / "scaling")),
        "preflight": cli_json("preflight"),
        "report": cli_json("report", str(reports)),
    }
    for what, data in outputs.items():
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(data)]
        assert errors == [], f"{what}: {errors[:5]}"
    assert outputs["checkpoint A B"]["checkpoint"]["other"]["present"] == ["model"]
    assert outputs["scaling"]["scaling"]["runs"]


def test_live_report_with_stacks_validates(validator) -> None:
    from diagnose.engine import diagnose_evidence
    from diagnose.evidence import Provenance, StackSample

    ev = [StackSample(rank=r, activity="barrier" if r else "checkpoint_io", op="barrier" if r else None, sample=s,
                      frames=("barrier (torch/distributed/distributed_c10d.py:4159)", "main (train.py:9)"),
                      provenance=Provenance(probe="live", pid=100 + r)) for r in range(3) for s in (0, 1)]
    data = diagnose_evidence(ev, command="hang").to_json_dict()
    assert data["stacks"] and validator.is_valid(data), list(validator.iter_errors(data))[:3]
