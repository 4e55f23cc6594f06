"""Redaction: no planted identifier survives in text, JSON, Markdown, HTML or the grid."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rich.console import Console

from diagnose.commands.record import render_record
from diagnose.output.grid import render_rank_grid
from diagnose.output.html import write_html
from diagnose.output.redact import Redactor, redact_report, redact_report_model, redact_text
from diagnose.output.report import Report
from tests.share.conftest import leaks
from tests.share.planted import PLANTED_LOG


def test_text_has_no_planted_identifier() -> None:
    out = redact_text(PLANTED_LOG)
    assert leaks(out) == []
    assert "node-1" in out and "<ip-1>" in out and "<port-1>" in out and "/path/to/project/" in out
    assert "<user>" in out and "<job>" in out and "<pid-1>" in out and "<partition>" in out


def test_json_report_has_no_planted_identifier(planted_report: Report) -> None:
    data = redact_report(planted_report.to_json_dict())
    assert leaks(json.dumps(data)) == []


def test_markdown_record_has_no_planted_identifier(planted_report: Report) -> None:
    md = render_record(planted_report, {"hardware": "A100 on gpu47", "launcher": "torchrun"})
    assert leaks(md) == []
    assert "| failure class | hang_mid_run → rank_failure |" in md


def test_html_has_no_planted_identifier(planted_report: Report, tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    write_html(planted_report, path, redact=True)
    assert leaks(path.read_text()) == []
    write_html(planted_report, path, redact=False)
    assert "gpu47" in path.read_text()  # the check above is not vacuous


def test_terminal_grid_has_no_planted_identifier(planted_report: Report) -> None:
    console = Console(record=True, width=120)
    console.print(render_rank_grid(redact_report_model(planted_report)))
    assert leaks(console.export_text()) == []


def test_redaction_keeps_the_diagnosis(planted_report: Report) -> None:
    before = planted_report.to_json_dict()
    after = redact_report(before)
    keys = ("id", "refines", "score", "confidence", "ranks", "rules", "symptom")
    assert [[c[k] for k in keys] for c in after["causes"]] == [[c[k] for k in keys] for c in before["causes"]]
    assert after["symptom"] == before["symptom"] and after["ranks"] == before["ranks"]
    assert [(s["rank"], s["culprit"], s["first_failure"]) for s in after["rank_states"]] == \
        [(s["rank"], s["culprit"], s["first_failure"]) for s in before["rank_states"]]
    Report.model_validate(after)


def test_placeholders_are_stable_within_one_output() -> None:
    r = Redactor()
    text = "host : gpuA1\nconnect to gpuA1:29500 from gpuB2\nhost: gpuB2\n10.0.0.7 10.0.0.8 10.0.0.7\n"
    out = redact_text(text, r)
    assert out.count("node-1") == 2 and out.count("node-2") == 2
    assert out.splitlines()[3] == "<ip-1> <ip-2> <ip-1>"
    assert redact_text("again gpuA1", r) == "again node-1"


def test_common_text_is_left_alone() -> None:
    text = ("fine-tuning c10d::TCPStore at 12:30:45 self.model.net threading.local torch.int "
            "https://pytorch.org/docs/stable/distributed.html process 0 terminated "
            "File \"/usr/lib/python3.10/runpy.py\", line 196 450/1000 [01:23<01:42, 5.37it/s] rank 3")
    assert redact_text(text) == text


def test_slurm_nodelist_is_expanded() -> None:
    out = redact_text("SLURM_JOB_NODELIST=nid00[1-3]\nnid002 failed\n")
    assert out == "SLURM_JOB_NODELIST=node-[1-3]\nnode-2 failed\n"


# ---- property: generated identifiers inside log-like lines -------------------------------------------------

TEMPLATES = [
    "{host}:{pid}:{pid2} [0] NCCL INFO Bootstrap : Using eth0:{ip}<{port}>",
    "  host      : {host}.{domain}",
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to [{host}]:{port} (errno: 110).",
    "(RayWorker pid={pid}, ip={ip}) [rank3]: watchdog fired",
    "MASTER_ADDR={ip} MASTER_PORT={port} torchrun train.py",
    "  File \"/home/{user}/{project}/train.py\", line 12, in <module>",
    "slurmstepd: error: *** JOB {job} ON {host} CANCELLED AT 2024-01-01T00:00:00 ***",
    "#SBATCH --partition={partition} --account={account}",
    "srun -p {partition} -A {account} python train.py",
    "  exitcode  : -9 (pid: {pid})",
    "connect to [{ip6}]:{port} failed",
    "see slurm-{job}.out for details",
    "{user}@{host}:~$ squeue --me",
]
FILLER = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.:=[]()", min_size=0, max_size=40)
_TEMPLATE_TEXT = " ".join(TEMPLATES)


@st.composite
def planted_lines(draw: st.DrawFn) -> tuple[str, list[str]]:
    ids = {
        "host": draw(st.from_regex(r"\A[a-z]{2,6}[0-9]{1,3}(-[0-9]{1,2})?\Z")),
        "domain": draw(st.from_regex(r"\A[a-z]{3,8}\.(com|org|de|internal|edu)\Z")),
        "ip": str(ipaddress.IPv4Address(draw(st.integers(0x0A000001, 0x0AFFFFFE)))),
        "ip6": str(ipaddress.IPv6Address(0x20010DB8 << 96 | draw(st.integers(1, 2**64)))),
        "port": str(draw(st.integers(1024, 65535))),
        "pid": str(draw(st.integers(1000, 4_000_000))),
        "pid2": str(draw(st.integers(1000, 4_000_000))),
        "user": draw(st.from_regex(r"\A[a-z]{3,8}[0-9]{0,2}\Z")),
        "project": draw(st.from_regex(r"\A[a-z]{4,10}\Z")),
        "job": str(draw(st.integers(10_000, 99_999_999))),
        "partition": draw(st.from_regex(r"\A[a-z]{3,6}[0-9]{1,2}q\Z")),
        "account": draw(st.from_regex(r"\Aacct[a-z]{2,5}[0-9]{1,3}\Z")),
    }
    values = set(ids.values())
    for value in values:
        assume(value not in _TEMPLATE_TEXT and len(value) >= 3)
        assume(not any(value != other and value in other for other in values))
    chosen = draw(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=8))
    lines = [draw(FILLER) + " " + t.format(**ids) + " " + draw(FILLER) for t in chosen]
    used = [v for k, v in ids.items() if any("{" + k + "}" in t for t in chosen)]
    if any("{domain}" in t for t in chosen):
        used.append(ids["host"] + "." + ids["domain"])
    return "\n".join(lines), used


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(planted_lines())
def test_property_no_generated_identifier_survives(case: tuple[str, list[str]]) -> None:
    text, used = case
    assert leaks(redact_text(text), used) == []
