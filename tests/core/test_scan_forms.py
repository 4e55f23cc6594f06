"""The literal-first scan forms: every line a detect matches holds its form, and the Hyperscan scan (forms,
then each signature's regex on the line) finds exactly the lines the Python ``re`` scan finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.probes.logs.probe import log_signatures
from diagnose.probes.logs.scan_form import MIN_LITERAL, required_literals, scan_form
from diagnose.probes.logs.scanner import MAX_LINE, Scanner

SIGS = log_signatures()
NOISE = (
    "gpu0001:40001:40101 [1] NCCL INFO AllReduce: opCount 1a2b01 sendbuff 0x7f3a000000 recvbuff 0x7f3a111111 "
    "count 262144 datatype 7 op 0 root 0 comm 0x55d2c41f0e70 [nranks=64] stream 0x55d2c3e8a1b0",
    "[rank3]:2026-11-29 10:05:11 | step 151200 | loss 2.3114 | lr 3.00e-04 | tokens/s 41212",
    "gpu0001:40001:40101 [1] NCCL INFO Channel 02/0 : 1[1] -> 2[2] via P2P/IPC",
    "",
)


@pytest.mark.parametrize(("detect", "caseless", "form"), [
    (r"comm 0x[0-9a-f]+ has already been destroyed", False, r"\ has\ already\ been\ destroyed"),
    (r"NCCL INFO (?:Bootstrap|NET/Socket) : Using (?:\[\d+\])?lo:", False,
     r"NCCL\ INFO\ Bootstrap\ :\ Using\ |NCCL\ INFO\ NET/Socket\ :\ Using\ "),
    (r"(?:Segmentation fault|Bus error)[ \t]+\(core dumped\)", False, r"\(core\ dumped\)"),
    (r"[Ss]aving checkpoint", False, r"Saving\ checkpoint|saving\ checkpoint"),
    (r"\S{1,256}\.(?:cc|h):\d+ -> \d+", False, r"\S\.(?:cc|h):\d+ -> \d+"),  # no long factor: the regex
    (r"(?i)cuda error", False, r"(?i)cuda error"),  # a caseless part keeps its regex
    # optional parts and short repeats are expanded: 'contexts?' and '(?:gpu )?' stay inside one factor
    (r"(?:extra|more) (?:gpu )?contexts? on \d", False,
     "|".join(f"{w}\\ {g}context{s}\\ on\\ " for w in ("extra", "more") for g in ("", "gpu\\ ") for s in ("", "s"))),
    # a factor's length is counted in UTF-8 bytes: four Chinese characters are a long enough literal
    (r"(?:每个进程|各个进程)[^\n]{0,30}?卡|memory used by (?:the )?ranks", False,
     r"memory\ used\ by\ ranks|memory\ used\ by\ the\ ranks|各个进程|每个进程"),
])
def test_forms_are_the_longest_required_literals(detect, caseless, form):
    assert scan_form(detect, caseless) == form


@pytest.mark.parametrize("sig", SIGS.signatures, ids=lambda s: s.name)
def test_every_example_holds_its_form(sig):
    form = re.compile(scan_form(sig.detect, sig.caseless), sig.flags)
    for ex in sig.examples:
        assert form.search(ex.line), (sig.name, ex.line)


def test_most_signatures_scan_as_literals():
    """A detect without a literal factor runs as a regex over every byte: each such form costs the whole scan
    a few percent (on the bench corpus one adds 1-7 ms to the 16-22 ms that 16 MB take), so they stay rare."""
    regex = [s.name for s in SIGS.signatures if (required_literals(s.detect, s.caseless) or (0,))[0] < MIN_LITERAL]
    assert len(regex) <= 0.02 * len(SIGS), regex


def _hits(scanner: Scanner, text: str) -> set[tuple[str, int]]:
    return {(h.signature, h.line_no) for h in scanner.scan_buffer(text.encode()).hits}


LINES = [ex.line for s in SIGS.signatures for ex in s.examples] + [c for s in SIGS.signatures
                                                                 for c in s.counter_examples]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(LINES), st.sampled_from(NOISE)), min_size=1, max_size=30),
       st.integers(0, 3))
def test_hyperscan_and_re_find_the_same_lines(lines, pad):
    pytest.importorskip("hyperscan")
    # a long padding before some lines puts their matches far into a long line
    text = "\n".join(("x " * (MAX_LINE * pad)) + line if i % 3 == 0 else line for i, line in enumerate(lines))
    assert _hits(Scanner(SIGS, engine="hyperscan"), text) == _hits(Scanner(SIGS, engine="re"), text)


def test_a_long_line_whose_literal_first_appears_without_the_match():
    pytest.importorskip("hyperscan")
    sig = SIGS.by_name["nccl_comm_reused_after_error"]
    line = ("comm 0xzz has already been destroyed " + "y" * MAX_LINE) * 3 + "comm 0xab12 has already been destroyed"
    hits = Scanner(SIGS, engine="hyperscan").scan_buffer(f"noise\n{line}\n".encode()).hits
    assert any(h.signature == sig.name and h.line_no == 2 for h in hits)


def test_no_scan_form_fires_on_every_nccl_info_line():
    """A form is a candidate filter: each candidate costs a Python regex on its line (~10 us). One of 8 MB of the
    benchmark's NCCL-INFO-heavy rank log holds about 40,000 'nranks': a form that took 'ranks' as its literal
    made the scan 30x slower (0.66 s against 0.02 s per 8 MB). No signature may nominate more than a few
    hundred candidate lines per MB of that log, and the candidates all together stay within 20 times the hits."""
    pytest.importorskip("hyperscan")
    from tests.bench.bench_corpus import rank_file

    text, _ = rank_file(0, 2**20)
    data = text.encode()
    scanner = Scanner(SIGS, engine="hyperscan")
    candidates: dict[int, int] = {}

    def count(sid: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
        candidates[sid] = candidates.get(sid, 0) + 1

    scanner._hs_db.scan([data], match_event_handler=count)  # the scanner's own database of forms (vectored)
    busiest = sorted(((n, SIGS.signatures[i].name) for i, n in candidates.items()), reverse=True)[:3]
    assert busiest[0][0] <= 500, busiest
    hits = sum(1 for _ in scanner.scan_blocks([data]))
    assert sum(candidates.values()) <= 20 * max(hits, 1), (sum(candidates.values()), hits, busiest)


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_a_users_sentence_is_read_in_a_files_head_only(engine: str) -> None:
    """Report signatures (the user's own sentences) are looked for in the first PROSE_HEAD bytes of a file; past them
    the file is machine output, and an error line is still found there."""
    from diagnose.probes.logs.scanner import PROSE_COMPONENT, PROSE_HEAD

    prose = next(s for s in SIGS.signatures if s.component == PROSE_COMPONENT)
    sentence, error = prose.examples[0].line, "RuntimeError: CUDA error: an illegal memory access was encountered"
    noise = "\n".join(NOISE[:3]) + "\n"
    filler = noise * (PROSE_HEAD // len(noise.encode()) + 1)
    scanner = Scanner(SIGS, engine=engine)
    head = {h.signature for h in scanner.scan_blocks([(sentence + "\n" + filler).encode()])}
    tail = {(h.signature, h.text) for h in scanner.scan_blocks([(filler + sentence + "\n" + error + "\n").encode()])}
    assert prose.name in head
    assert prose.name not in {name for name, _ in tail}
    assert any(text == error for _, text in tail), tail
