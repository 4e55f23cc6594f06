"""The symptom a report's own sentences describe -> InferredSymptom evidence (``rules/artifacts/cues.yaml``).

"Training gets stuck at init_process_group on the second node" names no cause, but it names a symptom, and
the runbook's symptom table then gives the likely causes. Lines that read as prose (mostly words, no log or
code markers) are scored against each symptom's cue words; the symptom is kept only when its score clearly
beats every other. The engine checks it after every rule of ``infer.yaml``: it is the weakest prior of all.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.evidence import InferredSymptom
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import FamilySpec, family

__all__ = ["parse", "score_lines", "BASIS"]

BASIS = "the report's own words"


Cue = tuple[str, re.Pattern[str], int, bool | None, tuple[str, ...], bool | None, bool]
_COMPILED: dict[int, list[Cue]] = {}


def _cues(spec: FamilySpec) -> list[Cue]:
    """(symptom, cue regex (its own, or a mention component's), weight, needs a multi-GPU report, the symptoms
    whose cues silence it, needs a report that sets several devices against one, read from a mention component)
    of every cue, compiled once per spec; a cue with ``fallback`` symptoms counts only when none of them has a cue
    of its own. ``multi`` and ``contrast`` are true (needed), false (counts only without it) or absent (either
    way)."""
    if id(spec) not in _COMPILED:
        _COMPILED[id(spec)] = [(symptom, _regex(c), int(c["weight"]), c.get("multi"), tuple(c.get("fallback", ())),
                                c.get("contrast"), "mention" in c)
                               for symptom, cues in spec.tables["symptoms"].items() for c in cues]
    return _COMPILED[id(spec)]


def _regex(cue: dict[str, Any]) -> re.Pattern[str]:
    """A cue's own regex, or (``mention: NAME``) the pattern of that component in ``rules/artifacts/mentions.yaml``,
    so that a sentence the mention reader recognises is read by one regex kept in one place."""
    if "mention" in cue:
        return family("mentions").rx(cue["mention"])
    return re.compile(cue["cue"], re.IGNORECASE | re.ASCII)


def prose_lines(src: Source, spec: FamilySpec) -> list[tuple[int, str]]:
    """(line number, text) of the lines that read as a sentence a user wrote (worked out once per source: the
    symptom cues and the mentions both read them)."""
    key = f"prose_lines:{id(spec)}"
    if key not in src.derived:
        src.derived[key] = _prose_lines(src, spec)
    return src.derived[key]


def _prose_lines(src: Source, spec: FamilySpec) -> list[tuple[int, str]]:
    tables, out = spec.tables, []
    marker, word, quote = spec.rx("log_marker"), spec.rx("word"), spec.rx("quote_prefix")
    code, form = spec.rx("inline_code"), spec.rx("form_line")
    head = src.lines[: tables["max_lines"]]
    # a title-like paste ('Stuck during training'): a source of a few short lines is read with fewer words
    title = sum(1 for raw in head if raw.strip()) <= tables["title_max_lines"]
    least = tables["title_min_words"] if title else tables["min_words"]
    least_cjk = tables["title_min_cjk_chars"] if title else tables["min_cjk_chars"]  # '训练卡住了', '显存溢出'
    for no, raw in enumerate(head, 1):
        line = quote.sub("", raw).strip()
        if not line or marker.match(line) or form.match(raw):
            continue
        # a command quoted inside a sentence is not counted against the sentence around it
        latin = any(len(words := word.findall(text)) >= least
                    and sum(map(len, words)) >= tables["min_word_share"] * len(text)
                    for text in dict.fromkeys((line, code.sub(" ", line).strip())))
        if latin or len(spec.rx("cjk").findall(line)) >= least_cjk:  # or a Chinese/Japanese/Korean sentence
            out.append((no, line))
    return out


def contrasts(lines: list[tuple[int, str]], spec: FamilySpec, launched_multi: bool = False) -> bool:
    """Whether the report sets several GPUs or nodes (a launch of several counts) against one."""
    few, multi = spec.rx("few_devices"), spec.rx("multi")
    has_few = any(few.search(text) for _, text in lines)
    return has_few and (launched_multi or any(few.match(text, m.start()) is None
                                              for _, text in lines for m in multi.finditer(text)))


def _fits(cue: Cue, multi: bool, contrast: bool) -> bool:
    """Whether the report is one the cue reads: its ``multi`` and ``contrast`` needs, where it has them, hold."""
    needs_multi, needs_contrast = cue[3], cue[5]
    return (needs_multi is None or needs_multi == multi) and (needs_contrast is None or needs_contrast == contrast)


def _own_cue_reads(every: list[Cue], symptom: str, text: str, span: tuple[int, int], multi: bool,
                   contrast: bool) -> bool:
    """Whether a cue of the symptom's own (not a mention component's) that reads this report reads exactly these
    words of the line (then it counts them, and the mention component's cue does not count them again)."""
    return any(c[0] == symptom and not c[6] and _fits(c, multi, contrast) and (m := c[1].search(text)) is not None
               and m.span() == span for c in every)


def _unidiom(idioms: list[re.Pattern[str]], text: str) -> str:
    """The line with each "stuck" that names no hang (an idiom, a quoted error) read as "resigned"."""
    for rx in idioms:
        text = rx.sub(r"\1resigned\2\3", text)
    return text


def _normalise(text: str, spec: FamilySpec) -> str:
    """A sentence as the cues read it: a typographic apostrophe as a plain one, a decimal point as a comma (69.9 is
    a number, not a sentence end), 'doesnt' as "doesn't", idioms of "stuck" that name no hang as "resigned", and
    without a suspected cause ("Maybe something to do with X?") or the run that works ("this error does not occur
    when I use one GPU")."""
    text = spec.rx("decimal_point").sub(",", text.replace("\u2019", "'"))
    text = spec.rx("bare_contraction").sub(r"\1n't", text)
    text = _unidiom([spec.rx(name) for name in ("stuck_with", "stuck_at_error")], text)
    text = spec.rx("speculation").sub(" ", text)
    return spec.rx("control_clause").sub(" ", text)


def score_lines(lines: list[tuple[int, str]], spec: FamilySpec,
                launched_multi: bool = False) -> dict[str, tuple[int, int, list[str], tuple[str, ...]]]:
    """Per symptom: (score, line of its strongest cue, the cue words seen, the symptoms its fallback cue stood
    for when only a fallback cue named it, else ()). ``launched_multi``: a line of the report (a command, not a
    sentence) starts several GPUs or nodes, which makes it a multi-GPU report too."""
    negated = spec.rx("negated_before")
    lines = [(no, _normalise(text, spec)) for no, text in lines]
    multi = launched_multi or any(spec.rx("multi").search(text) for _, text in lines)
    contrast = multi and contrasts(lines, spec, launched_multi)
    found: dict[str, list[Any]] = {}  # symptom -> [score, strongest weight, its line, words]
    every = _cues(spec)
    for fallbacks in (False, True):  # a fallback cue is read after the others, and only where they were silent
        for no, text in lines:
            for cue in every:
                symptom, rx, weight, _, silenced_by, _, shared = cue
                if bool(silenced_by) != fallbacks or not _fits(cue, multi, contrast):
                    continue
                if fallbacks and any(s in found and not found[s][4] for s in silenced_by):
                    continue
                m = rx.search(text)
                if m is None or negated.search(text, max(0, m.start() - 60), m.start()):  # "not a memory issue"
                    continue
                if shared and _own_cue_reads(every, symptom, text, m.span(), multi, contrast):  # counted once
                    continue
                entry = found.setdefault(symptom, [0, 0, no, [], silenced_by if fallbacks else ()])
                entry[0] += weight
                if weight > entry[1]:
                    entry[1], entry[2] = weight, no
                entry[3].append(m.group(0)[:60])
    for absorber, rule in spec.tables.get("absorbs", {}).items():
        absorbed, least = (rule["symptoms"], rule["min_weight"]) if isinstance(rule, dict) else (rule, 2)
        if absorber in found and found[absorber][1] >= least:
            for other in absorbed:
                if other in found:
                    found[absorber][0] += found[other][0]
                    found[absorber][3] += found.pop(other)[3]
    return {s: (score, line, words, stood_for) for s, (score, _, line, words, stood_for) in found.items()}


def parse(src: Source) -> list[Any]:
    """At most one InferredSymptom: the symptom whose cues clearly outweigh the others' in the file's prose."""
    spec = family("cues")
    lines = prose_lines(src, spec)
    if not lines:
        return []
    launch = spec.rx("multi_launch")
    scores = score_lines(lines, spec, any(launch.search(raw) for raw in src.lines[: spec.tables["max_lines"]]))
    ranked = sorted(scores.items(), key=lambda kv: -kv[1][0])
    if not ranked:
        return []
    symptom, (score, line, seen, stood_for) = ranked[0]
    runner_up = ranked[1][1][0] if len(ranked) > 1 else 0
    if score < spec.tables["min_score"] or score <= spec.tables["tentative_margin"] * runner_up:
        return []
    words = ", ".join(dict.fromkeys(f"'{w}'" for w in seen))[:200]
    close = score < spec.tables["margin"] * runner_up
    if close:  # ahead, but not clearly: said so, and the wording may settle it
        words = f"{words}; ahead of {ranked[1][0]} ({runner_up}) but not clearly"
        stood_for = tuple(dict.fromkeys([*(stood_for or (symptom,)), ranked[1][0]]))
    return [InferredSymptom(symptom=symptom, basis=f"{BASIS} ({words})", provenance=src.prov(line), rank=src.rank,
                            missing=tuple(spec.tables["missing"].get(symptom, ())), undecided=stood_for,
                            runner_up=ranked[1][0] if close else None, said=not close,
                            text=f"{symptom}: {words} (score {score} vs {runner_up})")]
