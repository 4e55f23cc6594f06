"""What a report mentions -> Mention evidence, one per component and line (``rules/artifacts/mentions.yaml``).

A report with no error line still says what it is about: "the model has BatchNorm layers", "the two machines
talk over 10GbE", "rank 0 tokenises the dataset first". Sentences are the cue reader's prose lines
(``cues.prose_lines``); short command, code and config lines are read too for the components whose mention
there means something (``nn.BatchNorm2d(``, ``--batch-size 2``, ``NCCL_SOCKET_IFNAME=eth0``). Lines a program
printed are not mentions. Rules pair a component with a reported or inferred symptom.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import diagnose.cache as cache
from diagnose.evidence import Mention
from diagnose.probes.artifacts.cues import prose_lines
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import FamilySpec, family

try:  # the one-pass gate is optional: without it every component's pattern is searched
    import hyperscan  # type: ignore[import-untyped]  # optional dependency: hyperscan
except ImportError:  # pragma: no cover - exercised where the wheel is missing
    hyperscan = None

__all__ = ["parse"]

SEPARATOR = "\x00"  # joins the lines read: no component pattern matches it, and \s does not cross it


def _spaced(text: str, spec: FamilySpec) -> str:
    """``text`` with a space where a CJK character meets a Latin letter or digit. Chinese, Japanese and Korean
    write Latin terms without spaces ('发现是BN的问题'), and to Python's \\w those characters are word characters: a
    pattern that wants a word boundary around 'BN' sees one only in this second reading (the first keeps the patterns
    written for CJK text)."""
    return text if text.isascii() else spec.rx("cjk_latin_boundary").sub(" ", text)


def _lines(src: Source, spec: FamilySpec, with_code: bool) -> list[tuple[int, str, str]]:
    """(line number, text, prose | code) of the lines that may mention a component; code lines only ``with_code``."""
    tables = spec.tables
    cues = family("cues")
    prose = dict(prose_lines(src, cues))
    printed, command, quoted = spec.rx("printed"), spec.rx("command_like"), cues.rx("inline_code")
    code_spans = spec.rx("quoted_code")
    out = []
    for no, raw in enumerate(src.lines[: tables["max_lines"]], 1):
        if no in prose:
            if not command.search(prose[no]):
                out.append((no, prose[no], "prose"))
                if (spaced := _spaced(prose[no], spec)) != prose[no]:
                    out.append((no, spaced, "prose"))
                if with_code and (spans := code_spans.findall(prose[no])):  # `strategy='ddp'` in a sentence
                    out.append((no, " ".join(spans), "code"))
                continue
            # a sentence that quotes a command: the words around the quote are prose, the whole line reads like
            # the command (whatever its length)
            if (words := quoted.sub("`...`", prose[no])) != prose[no] and not command.search(words):
                out.append((no, words, "prose"))
            if with_code:
                out.append((no, prose[no], "code"))
            continue
        line = raw.strip()
        if with_code and line and len(line) <= tables["max_code_len"] and not printed.search(line):
            out.append((no, line, "code"))
    return out


def _search(
    spec: FamilySpec, name: str, lines: list[tuple[int, str, str]]
) -> list[tuple[Any, tuple[int, str, str]]]:
    """(match, its line) of component ``name`` over ``lines``, first ones first, at most the cap: one search over
    the lines joined by a byte no pattern matches (a search per line and component costs far more)."""
    how, cap = spec.tables["components"][name], spec.tables["max_per_component"]
    lines = [ln for ln in lines if how["where"] == "any" or ln[2] == how["where"]]
    starts, pos = [], 0
    for _, text, _ in lines:
        starts.append(pos)
        pos += len(text) + 1
    unless = spec.rx(how["unless"]) if how.get("unless") else None
    out = []
    for m in spec.rx(name).finditer(SEPARATOR.join(text for _, text, _ in lines)):
        line = lines[bisect_right(starts, m.start()) - 1]
        if unless is None or not unless.search(line[1]):
            out.append((m, line))
            if len(out) >= cap:
                break
    return out


_GATES: dict[int, Any] = {}


def _gate(spec: FamilySpec) -> Any:
    """A Hyperscan database of every component pattern in prefilter mode (it may report a component that the
    pattern itself then rejects, never miss one), or None where the wheel is missing or refuses a pattern."""
    if hyperscan is None:
        return None
    if id(spec) not in _GATES:
        _GATES[id(spec)] = _compile_gate(spec)
    return _GATES[id(spec)]


def _compile_gate(spec: FamilySpec) -> Any:
    names = list(spec.tables["components"])
    expressions = [spec.by_name[n].regex.encode() for n in names]
    flags = [
        hyperscan.HS_FLAG_PREFILTER
        | hyperscan.HS_FLAG_SINGLEMATCH
        | (hyperscan.HS_FLAG_CASELESS if spec.by_name[n].caseless else 0)
        for n in names
    ]

    def build() -> Any:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=expressions, ids=list(range(len(names))), elements=len(names), flags=flags)
        return db

    key = cache.digest([*expressions, repr(flags)])  # compiling takes a quarter second: built once, then loaded
    try:
        return cache.hyperscan_database(f"mentions-{key}", build)
    except Exception:  # noqa: BLE001 - a pattern the engine refuses: search every component instead
        return None


def _candidates(spec: FamilySpec, text: str) -> list[str]:
    """The components that may occur in ``text``: one Hyperscan pass, else all of them."""
    names = list(spec.tables["components"])
    db = _gate(spec)
    if db is None:
        return names
    hits: set[int] = set()
    db.scan(text.encode("utf-8", "replace"), match_event_handler=lambda i, *_: hits.add(i))
    # The gate reads bytes: a CJK character class ('[个张]卡') is a class of single bytes there, and Hyperscan's
    # UTF-8 mode explodes on bounded repeats. So on text that is not ASCII, a component whose pattern holds such
    # characters is searched whatever the gate saw; on ASCII text the gate screens every component, as it did.
    wide = not text.isascii()
    return [n for i, n in enumerate(names) if i in hits or (wide and not spec.by_name[n].regex.isascii())]


def parse(src: Source) -> list[Any]:
    """The first few mentions of each component the file's sentences (and, where it counts, its command, code and
    config lines) make."""
    spec = family("mentions")
    head = src.lines[: spec.tables["max_lines"]]
    candidates = _candidates(spec, SEPARATOR.join(head))  # most logs name none: nothing more is read
    if not candidates:
        return []
    components = spec.tables["components"]
    lines = _lines(src, spec, with_code=any(components[n]["where"] != "prose" for n in candidates))
    found = [
        (
            no,
            order,
            Mention(
                component=name,
                words=m.group(0)[:80],
                where=where,
                provenance=src.prov(no),
                rank=src.rank,
                text=text[:300],
            ),
        )
        for order, name in enumerate(candidates)
        for m, (no, text, where) in _search(spec, name, lines)
    ]
    # a sentence quoting a command is read twice (its words, and the whole line): one mention per line and component
    unique: dict[tuple[int, str], Any] = {}
    for no, _, mention in sorted(found, key=lambda f: (f[0], f[1])):
        unique.setdefault((no, mention.component), mention)
    return list(unique.values())
