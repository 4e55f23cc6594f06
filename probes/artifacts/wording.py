"""The symptom a report's wording resembles, when nothing else names one (``rules/artifacts/wording.json``).

The cue words of ``cues.yaml`` name a symptom when a sentence clearly says it; many reports say it in words no
cue knows ("loss goes crazy after resuming", a bare error title). This is the last resort under them: a naive
Bayes model over the words of labelled real reports (the table is counts, made by ``scripts/train_wording.py``
from the held-out corpora and the harvested sentences), asked only when no rule, artifact or cue named a
symptom. Its guess is a weak prior and says so.

Each file gives the words of its first ``HEAD_CHARS`` characters that the table knows (``ReportWords``, in the
single pass); the engine unites them over the report and asks `guess`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from diagnose.evidence import InferredSymptom, ReportWords
from diagnose.probes.artifacts import cues
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import artifacts_dir, family
from diagnose.vocab import SYMPTOMS

__all__ = ["words", "parse", "guess", "settle", "table", "check_table", "missing_for", "WordTable", "HEAD_CHARS"]

CLOSE = math.log(3)  # a guess less than 3:1 over the next symptom names that symptom as its runner-up
LEANS = math.log(1.5)  # a word named in the basis is half again as frequent in the guessed symptom's reports
HEAD_CHARS = 16384  # a report's words are at its head; a long log's later lines repeat the same few
_TOKEN = re.compile(  # regex: words and CJK characters of free text, not tool output
    r"[a-z][a-z0-9_']{2,}|[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")


class WordTable(BaseModel):
    """Per word, in how many labelled reports of each symptom it occurs; the reports per symptom."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str
    trained_from: dict[str, int] = Field(description="labelled texts per corpus the counts come from")
    alpha: float = Field(gt=0, description="additive smoothing of the word counts")
    min_words: int = Field(ge=1, description="fewer known words than this guess nothing")
    symptoms: tuple[str, ...] = Field(min_length=2)
    documents: dict[str, int] = Field(description="labelled texts per symptom (the class prior)")
    words: dict[str, tuple[int, ...]]

    @model_validator(mode="after")
    def _shapes(self) -> WordTable:
        if set(self.documents) != set(self.symptoms):
            raise ValueError("documents must count every symptom")
        unknown = set(self.symptoms) - set(SYMPTOMS)
        if unknown:
            raise ValueError(f"symptoms outside the contract: {sorted(unknown)}")
        bad = [w for w, counts in self.words.items() if len(counts) != len(self.symptoms)]
        if bad:
            raise ValueError(f"words with the wrong number of counts: {bad[:5]}")
        return self

    @cached_property
    def model(self) -> tuple[dict[str, tuple[float, ...]], tuple[float, ...]]:
        """log P(word | symptom) of every known word (multinomial, smoothed over the vocabulary) and the log prior
        of each symptom."""
        totals = [sum(c[i] for c in self.words.values()) for i in range(len(self.symptoms))]
        room = self.alpha * len(self.words)
        loglik = {w: tuple(math.log((c[i] + self.alpha) / (totals[i] + room)) for i in range(len(c)))
                  for w, c in self.words.items()}
        docs = sum(self.documents.values())
        prior = tuple(math.log((self.documents[s] + 1) / (docs + len(self.symptoms))) for s in self.symptoms)
        return loglik, prior


def words(text: str) -> set[str]:
    """The lower-cased words of ``text`` (three letters or more) and the pairs of adjacent CJK characters."""
    found = _TOKEN.findall(text.lower())
    out = {w for w in found if len(w) > 1}
    cjk = [w for w in found if len(w) == 1]
    out.update(a + b for a, b in zip(cjk, cjk[1:], strict=False))
    return out


def _load() -> WordTable:
    return WordTable.model_validate(json.loads((artifacts_dir() / "wording.json").read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def table() -> WordTable:
    """The shipped word table, validated once per process."""
    return _load()


def check_table() -> list[str]:
    """What is wrong with the shipped word table (``diagnose rules check``): nothing, or one located message."""
    try:
        _load()
    except (OSError, ValueError) as exc:  # pydantic's ValidationError and json's decode error are ValueErrors
        return [f"{artifacts_dir() / 'wording.json'}: {str(exc).splitlines()[0][:200]}"]
    return []


def parse(src: Source) -> list[Any]:
    """One ReportWords: the known words of the head of the file (read from its first piece only)."""
    if src.line_offset:
        return []
    known = words(src.text[:HEAD_CHARS]).intersection(table().words)
    if not known:
        return []
    sentences = len(cues.prose_lines(src, family("cues")))
    return [ReportWords(words=tuple(sorted(known)), sentences=sentences, provenance=src.prov(None), rank=src.rank,
                        text=f"{len(known)} word(s) the wording table knows, {sentences} sentence(s)")]


def guess(evidence: Sequence[Any], words_table: WordTable | None = None,
          among: Sequence[str] = ()) -> InferredSymptom | None:
    """The symptom whose labelled reports the report's words resemble most (by ``words_table``, the shipped one
    by default; only ``among`` these symptoms when given), or None with too few known words. Files that show steps
    going by, or a system tool's output, and hold no sentence a user wrote are a run's or a machine's state, not a
    report of trouble: a healthy run or node is given no symptom."""
    t = words_table or table()
    sampled = [e for e in evidence if e.kind == "report_words"]
    if not any(e.sentences for e in sampled) and any(e.kind in ("step_metric", "system_fact") for e in evidence):
        return None
    known = sorted({w for e in sampled for w in e.words}.intersection(t.words))
    if len(known) < t.min_words:
        return None
    loglik, prior = t.model
    scores = list(prior)
    for w in known:
        for i, value in enumerate(loglik[w]):
            scores[i] += value
    if among:  # the others are out of the question: the lowest score there is
        if not set(among) & set(t.symptoms):
            return None
        scores = [v if t.symptoms[i] in among else -math.inf for i, v in enumerate(scores)]
    best = max(range(len(scores)), key=scores.__getitem__)
    second = max((i for i in range(len(scores)) if i != best), key=scores.__getitem__, default=best)
    runner = scores[second]
    symptom = t.symptoms[best]
    # the words that speak most for it against the average symptom
    leaning = sorted(((loglik[w][best] - sum(loglik[w]) / len(loglik[w]), w) for w in known), reverse=True)
    lean = [w for tilt, w in leaning[:5] if tilt >= LEANS] or [w for _, w in leaning[:3]]
    said = ", ".join(f"'{w}'" for w in lean)
    basis = (f"the report's wording resembles labelled reports of {symptom} ({said}; {_odds(scores[best] - runner)}); "
             f"a guess: name what you saw with --symptom")
    close = second != best and scores[best] - runner < CLOSE
    return InferredSymptom(symptom=symptom, basis=basis, provenance=sampled[0].provenance,
                           missing=missing_for(symptom), runner_up=t.symptoms[second] if close else None,
                           text=f"{symptom} from {len(known)} known word(s): {said}")


def missing_for(symptom: str) -> tuple[str, ...]:
    """What to collect next for ``symptom`` (cues.yaml ``missing``)."""
    return tuple(family("cues").tables["missing"].get(symptom, ()))


def _by_components(evidence: Sequence[Any], among: Sequence[str]) -> InferredSymptom | None:
    """The one candidate symptom that the report's mentioned components place (``timing_components`` of
    cues.yaml: a hang that comes with saving or an evaluation came mid-run), or None."""
    mentioned = {e.component: e for e in evidence if e.kind == "mention"}
    placed = [(s, mentioned[c]) for s, comps in family("cues").tables["timing_components"].items()
              if s in among for c in comps if c in mentioned]
    if len({s for s, _ in placed}) != 1:
        return None
    symptom, by = placed[0]
    return InferredSymptom(symptom=symptom, basis=f"the report also mentions {by.component} ('{by.words}'), which "
                           "comes only once training runs", provenance=by.provenance,
                           missing=missing_for(symptom), text=f"{symptom} from the mentioned {by.component}")


def settle(evidence: Sequence[Any]) -> list[Any]:
    """``evidence`` with each symptom a cue could not decide (``undecided``: a bare hang word says nothing of when)
    decided by the components the report mentions, else by its wording among the candidates; unchanged where
    neither says."""
    out = list(evidence)
    for i, e in enumerate(out):
        if e.kind == "inferred_symptom" and e.undecided and (
                g := _by_components(evidence, e.undecided) or guess(evidence, among=e.undecided)):
            basis = f"{e.basis}; which of {' or '.join(e.undecided)}: {g.basis}"
            out[i] = e.model_copy(update={"symptom": g.symptom, "basis": basis, "missing": g.missing,
                                          "undecided": (), "runner_up": g.runner_up, "text": f"{e.text}; {g.text}"})
    return out


def _odds(margin: float) -> str:
    """The guess's margin over the runner-up as odds, in words."""
    odds = math.exp(min(margin, 20.0))
    return f"about {odds:.0f}:1 over the next symptom" if odds >= 2 else "barely ahead of the next symptom"
