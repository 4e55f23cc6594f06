"""Every signature matches its examples (with their fields) and none of its near misses."""

import re

import pytest

from diagnose.probes.logs.scanner import Scanner
from diagnose.probes.logs.signatures import load_signatures

SIGS = load_signatures()


def test_signature_set_is_not_empty():
    assert len(SIGS) > 50


@pytest.mark.parametrize("sig", SIGS.signatures, ids=lambda s: s.name)
def test_examples_match_with_fields(sig):
    for ex in sig.examples:
        fields = sig.match(ex.line)
        assert fields is not None, f"{sig.name} does not match its example {ex.line!r}"
        for key, value in ex.fields.items():
            assert str(fields.get(key)) == str(value), f"{sig.name}: field {key} of {ex.line!r}"


@pytest.mark.parametrize("sig", SIGS.signatures, ids=lambda s: s.name)
def test_counter_examples_do_not_match(sig):
    for line in sig.counter_examples:
        assert sig.match(line) is None, f"{sig.name} matches its near miss {line!r}"


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_both_scan_engines_find_every_example(engine):
    pytest.importorskip("hyperscan") if engine == "hyperscan" else None
    scanner = Scanner(SIGS, engine=engine)
    for sig in (s for s in SIGS.signatures if s.component != "steptime"):
        text = "noise line\n" + sig.examples[0].line + "\nmore noise\n"
        hits = scanner.scan_buffer(text.encode())
        assert any(h.signature == sig.name and h.line_no == 2 for h in hits.hits), (engine, sig.name)


@pytest.mark.parametrize(
    ("pattern", "quadratic"),
    [
        (r"\S+\[\d+\]: segfault", True),
        (r"(?P<n>\d+) bytes", True),
        (r"(?:\w+ : invalid|reduction \d+)", True),
        (r".*?last completed", True),
        (r"\S{1,256}\[\d+\]: segfault", False),
        (r"^\S+ bytes", False),
        (r"Killed process \d+", False),
        (r"(?:GPU \d+; )?[\d.]{1,24} GiB", False),
    ],
)
def test_unbounded_opening_repeats_are_found(pattern, quadratic):
    from diagnose.probes.logs.regex_lint import unbounded_lead

    assert (unbounded_lead(pattern) is not None) is quadratic


def test_a_signature_opening_with_an_unbounded_repeat_is_refused_with_the_fix(tmp_path):
    from diagnose.errors import RuleSetError

    (tmp_path / "bad.yaml").write_text(
        "signatures:\n"
        "  - name: bad_segv\n    component: kernel\n    description: x\n"
        "    detect: '\\S+\\[\\d+\\]: segfault at'\n"
        "    examples: [{line: 'python[12]: segfault at 0'}]\n"
        "    counter_examples: ['segfault']\n"
    )
    with pytest.raises(RuleSetError) as err:
        load_signatures([tmp_path])
    text = str(err.value)
    assert "bad.yaml" in text and "unbounded repeat" in text and "\\S{1,256}" in text


def test_a_detect_with_a_global_inline_flag_is_refused(tmp_path):
    # the scanner joins every detect into one expression, where a leading (?i) is an error at run time
    from diagnose.errors import RuleSetError

    (tmp_path / "bad.yaml").write_text(
        "signatures:\n"
        "  - name: bad_caseless\n    component: torch\n    description: x\n"
        "    detect: '(?i)weight torch\\.size'\n"
        "    examples: [{line: 'Weight torch.Size'}]\n"
        "    counter_examples: ['bias']\n"
    )
    with pytest.raises(RuleSetError) as err:
        load_signatures([tmp_path])
    assert "bad.yaml" in str(err.value) and "caseless: true" in str(err.value)


@pytest.mark.parametrize(("detect", "form"), [
    (r"\S{1,256}\[\d+\]: segfault", r"\S\[\d+\]: segfault"),
    (r"(?i)[\d.]{1,24} GiB", r"(?i)[\d.] GiB"),
    (r"\d{2,12} seconds", r"\d{2} seconds"),
    (r"foo \d{1,3}", r"foo \d{1,3}"),  # not an opening: the bound is part of what matches
])
def test_the_hyperscan_form_cuts_only_the_opening_bound(detect, form):
    from diagnose.probes.logs.scanner import hit_form

    assert hit_form(detect) == form


NON_ASCII_QUANTIFIED = re.compile(r"[^\x00-\x7f][?*+{]")
NON_ASCII_IN_CLASS = re.compile(r"\[[^\]]*[^\x00-\x7f][^\]]*\]")


@pytest.mark.parametrize("sig", SIGS.signatures, ids=lambda s: s.name)
def test_detect_is_byte_safe(sig):
    """Both scan engines match UTF-8 bytes: a quantifier right after a non-ASCII character applies to its last byte,
    and a non-ASCII character in a class is a set of bytes; group the character ((?:的)?) and keep classes ASCII."""
    assert not NON_ASCII_QUANTIFIED.search(sig.detect), sig.detect
    assert not NON_ASCII_IN_CLASS.search(sig.detect), sig.detect
