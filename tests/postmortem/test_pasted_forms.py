"""Every signature example, pasted the way people paste it, is still found; near misses stay quiet.

Read through the same records `diagnose logs --evidence` prints, from real files. One file per
signature holds each single mutation (exhaustive); hypothesis then stacks random mutations.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.commands.logs import evidence_records
from diagnose.probes.logs.probe import LogProbe, log_signatures, rank_from_line
from tests.postmortem import pasted_forms as pf

SIGS = log_signatures().signatures
EXCEPTION_FAMILY = "python_exception"  # the exception-line signatures stand in for each other
BY_NAME = {s.name: s for s in SIGS}
TYPE_BOUND: set[str] = set()  # signatures that need the exception type to be recognised
EXAMPLES = [(s.name, ex.line) for s in SIGS for ex in s.examples]
NEAR_MISSES = [(s.name, line) for s in SIGS for line in s.counter_examples]


def _peeled(line: str) -> str:
    """The example without a rank prefix it already carries (exception forms are made of the bare line)."""
    for prefix in ("[rank1]: ", "[rank0]: ", "1: ", "0: "):
        if line.startswith(prefix):
            return line[len(prefix):]
    return line


def single_mutations(line: str) -> list[str]:
    """One mutation at a time, each kind in every variant."""
    out = [p + line for p in (*pf.RANK_PREFIXES, *pf.LOGGER_PREFIXES, *pf.INDENTS, *pf.QUOTES)]
    out += [pf.coloured(line, c) for c in pf.COLOURS]
    out += [pf.coloured_prefix(line, "[rank3]: "), pf.coloured_prefix(line, pf.LOGGER_PREFIXES[0])]
    out += [pf.crlf(line), pf.after_progress_bar(line), pf.before_progress_bar(line), pf.inline_code(line)]
    out += ["[rank3]:[rank3]: " + pf.LOGGER_PREFIXES[3] + line]
    out += pf.markdown_rendered(line)
    return out


def _names_the_type(name: str, line: str) -> bool:
    """A signature whose core is the exception type (a family marker), not the message."""
    parts = pf.typed(_peeled(line))
    if parts is None:
        return False
    sig = BY_NAME[name]
    message = parts["msg"]
    if sig.detector.search(message):
        return False  # the message alone is recognised: every form must be
    # A family marker (its core is the type), or a message too generic to be recognised without its
    # type ("Connection reset by peer"): the forms that drop the type are not required.
    TYPE_BOUND.add(name)
    return True


def example_mutations(name: str, line: str) -> list[str]:
    forms = pf.exception_forms(_peeled(line))
    if name.startswith(EXCEPTION_FAMILY):  # the message alone names no exception
        forms = [f for f in forms if pf.typed(f.splitlines()[-1]) or "Error(" in f or f.endswith(")")]
    elif _names_the_type(name, line):  # only the forms that still carry the type
        short = pf.typed(_peeled(line))["type"].rsplit(".", 1)[-1]
        forms = [f for f in forms if short in f]
    return [*single_mutations(line), *forms, *(pf.wrapped(line, w) for w in (80, 100, 120))]


def _matches(found: set[str], name: str) -> bool:
    if name.startswith(EXCEPTION_FAMILY):
        return any(f.startswith(EXCEPTION_FAMILY) for f in found)
    return name in found


def _write_variants(path: Path, variants: list[str]) -> list[tuple[int, int]]:
    """Variants separated by blank lines; the (first, last) line numbers of each."""
    spans, text, line = [], "", 1
    for v in variants:
        n = v.replace("\r\n", "\n").replace("\r", "").rstrip("\n").count("\n") + 1
        spans.append((line, line + n - 1))
        text += v + ("\n" if not v.endswith("\n") else "") + "\n"
        line += n + 1
    path.write_bytes(text.encode("utf-8"))
    return spans


PROBE = LogProbe(log_signatures(), workers=1)  # one compiled scanner for every file of the module


def _records(path: Path) -> list[dict]:
    result = PROBE.collect([path])
    assert not result.skipped, result.skipped
    return [r for r in evidence_records(result.evidence) if r["kind"] == "log_line"]


@pytest.mark.parametrize("name", sorted({s.name for s in SIGS}))
def test_every_single_mutation_of_every_example_is_found(name: str, tmp_path: Path) -> None:
    sig = log_signatures().by_name[name]
    missed = []
    for ex in sig.examples:
        variants = example_mutations(name, ex.line)
        spans = _write_variants(tmp_path / "pasted.log", variants)
        recs = _records(tmp_path / "pasted.log")
        for variant, (lo, hi) in zip(variants, spans, strict=True):
            found = {r["signature"] for r in recs if lo <= r["line"] <= hi}
            if not _matches(found, name):
                missed.append(variant)
    assert not missed, f"{name} not found in {len(missed)} pasted forms, e.g. {missed[:3]!r}"


def test_few_signatures_need_the_exception_type() -> None:
    """At most 5% of the signatures may rely on the type being pasted with the message."""
    for name, line in EXAMPLES:
        _names_the_type(name, line)
    assert len(TYPE_BOUND) <= 0.05 * len(SIGS), sorted(TYPE_BOUND)


@pytest.mark.parametrize("name", sorted({s.name for s in SIGS}))
def test_near_misses_with_the_same_prefixes_stay_quiet(name: str, tmp_path: Path) -> None:
    sig = log_signatures().by_name[name]
    variants = [v for line in sig.counter_examples for v in single_mutations(line)]
    _write_variants(tmp_path / "near.log", variants)
    fired = [r["text"] for r in _records(tmp_path / "near.log") if r["signature"] == name]
    assert not fired, f"{name} fires on pasted near misses: {fired[:3]!r}"


def line_name_is_exception(line: str) -> bool:
    return any(n.startswith(EXCEPTION_FAMILY) for n, ex in EXAMPLES if ex == line)


@st.composite
def pasted(draw: st.DrawFn, line: str) -> str:
    """A random stack of what terminals, loggers and launchers add to one line."""
    forms = pf.exception_forms(_peeled(line))
    if line_name_is_exception(line):
        forms = [f for f in forms if pf.typed(f.splitlines()[-1]) or "Error(" in f or f.endswith(")")]
    elif any(ex == line and _names_the_type(n, line) for n, ex in EXAMPLES):  # as example_mutations: keep the type
        short = pf.typed(_peeled(line))["type"].rsplit(".", 1)[-1]
        forms = [f for f in forms if short in f]
    text = draw(st.sampled_from([line, *forms])) if forms and draw(st.booleans()) else line
    head, _, last = text.rpartition("\n")
    prefix = ""
    if draw(st.booleans()):
        prefix += draw(st.sampled_from(pf.LOGGER_PREFIXES))
    if draw(st.booleans()):
        prefix = draw(st.sampled_from(pf.RANK_PREFIXES)) + prefix
    if draw(st.booleans()):
        prefix = draw(st.sampled_from(pf.INDENTS)) + prefix
    colour = draw(st.sampled_from(["none", "line", "prefix"]))
    if colour == "line":
        last = pf.coloured(prefix + last, draw(st.sampled_from(pf.COLOURS)))
    elif colour == "prefix" and prefix:
        last = pf.coloured_prefix(last, prefix)
    else:
        last = prefix + last
    bar = draw(st.sampled_from(["none", "before", "after"]))
    if bar == "before":
        last = pf.after_progress_bar(last)
    elif bar == "after":
        last = pf.before_progress_bar(last)
    elif colour == "none" and draw(st.booleans()):  # a terminal wraps every line at its width, not one
        width = draw(st.integers(min_value=60, max_value=200))
        last = pf.wrapped(last, width)
        head = "\n".join(pf.wrapped(h, width) for h in head.split("\n")) if head else head
    text = f"{head}\n{last}" if head else last
    return pf.crlf(text) if draw(st.booleans()) else text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_stacked_mutations_are_found(data: st.DataObject, tmp_path: Path) -> None:
    name, line = data.draw(st.sampled_from(EXAMPLES))
    text = data.draw(pasted(line))
    path = tmp_path / "one.log"
    path.write_bytes(("started\n" + text + "\ndone\n").encode("utf-8"))
    found = {r["signature"] for r in _records(path)}
    assert _matches(found, name), (name, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_stacked_near_misses_stay_quiet(data: st.DataObject, tmp_path: Path) -> None:
    name, line = data.draw(st.sampled_from(NEAR_MISSES))
    text = data.draw(pasted(line))
    path = tmp_path / "one.log"
    path.write_bytes(("started\n" + text + "\ndone\n").encode("utf-8"))
    assert name not in {r["signature"] for r in _records(path)}, (name, text)


def test_rank_is_read_through_colour_and_stacked_prefixes(tmp_path: Path) -> None:
    path = tmp_path / "console.log"
    path.write_bytes(b"\x1b[31m[rank5]:[rank5]: ValueError: bad shard 7\x1b[0m\r\n")
    (rec,) = [r for r in _records(path) if r["signature"] == "python_exception"]
    assert (rec["rank"], rec["line"], rec["text"]) == (5, 1, "[rank5]:[rank5]: ValueError: bad shard 7")
    assert rank_from_line(rec["text"]) == 5


def test_rank_of_an_icefall_style_logger_prefix(tmp_path: Path) -> None:
    """icefall's setup_logger writes '(rank/world_size)' after the file:line of each record."""
    path = tmp_path / "train.log"
    path.write_bytes(b"2023-04-13 16:00:05,621 INFO [trainer.py:650] (5/8) Reaches end of dataloader.\n"
                     b"2023-04-13 16:00:07,001 ERROR [train.py:12] (3/8) ValueError: bad shard 7\n")
    (rec,) = [r for r in _records(path) if r["signature"] == "python_exception"]
    assert (rec["rank"], rec["line"]) == (3, 2)
    assert rank_from_line("2023-04-13 16:00:05,621 INFO [data.py:9] (12/8) x") == 12
    assert rank_from_line("2023-04-13 16:00:05,621 INFO [trainer.py:650] loss (5/8) of runs") is None


def test_tqdm_redraws_keep_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "bar.log"
    path.write_bytes(f"one\n{pf.TQDM}\r{pf.TQDM}\rRuntimeError: CUDA error: invalid device ordinal\nthree\n"
                     "KeyError: 'LOCAL_RANK'\n".encode())
    recs = _records(path)
    assert {(r["signature"], r["line"]) for r in recs} >= {("invalid_device_ordinal", 2), ("rank_env_missing", 4)}


def test_cli_evidence_prints_one_record_per_signature(tmp_path: Path) -> None:
    path = tmp_path / "rank1.log"
    path.write_text("RuntimeError: Distributed package doesn't have NCCL built in\n")
    out = subprocess.run([sys.executable, "-m", "diagnose", "logs", str(path), "--evidence"],
                         capture_output=True, text=True, check=True).stdout
    recs = [json.loads(line) for line in out.splitlines()]
    sigs = {r["signature"] for r in recs if r["kind"] == "log_line"}
    assert {"python_exception", "backend_not_built"} <= sigs
    for r in recs:
        if r["kind"] == "log_line":
            assert (r["source"], r["line"], r["rank"]) == (str(path), 1, 1)
            assert r["text"].startswith("RuntimeError: Distributed package")
