"""Naming the cause from what users write, once the symptom is known: each sentence of
tests/prose/cause_sentences.yaml is a one-file report, read by the mentions probe (rules/artifacts/mentions.yaml)
and diagnosed by the engine told the sentence's symptom (``run_logs(..., symptom=...)``, as ``--symptom`` does).

The sentences come from real threads whose cause was established (a maintainer's answer, a merged fix, the
reporter's confirmation), kept apart from every held-out corpus. `write` sentences were read while the mention
components and rules were written; `measure` sentences were not, so their floors are a measurement, not a fit.

Three numbers per split:
- told top-1 / top-3: the labelled cause is the engine's first / among its first three (symptom told);
- mention precision: of the sentences whose first cause a mention rule (``*-mentions-*``) put there, the share
  where it is the label; a mention that points at the wrong cause sends the reader down the wrong runbook row, so
  it has its own floor;
- negatives quiet: of the sentences that point at no cause (`cause: none`), the share whose first cause is still
  the runbook's prior (no mention rule put one there).
Run this file as a script for the per-cause table.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from diagnose.commands.logs import run_logs
from diagnose.vocab import CAUSES, SYMPTOMS

HERE = Path(__file__).parent
SENTENCES: list[dict[str, Any]] = yaml.safe_load((HERE / "cause_sentences.yaml").read_text(encoding="utf-8"))[
    "sentences"
]

# measured with the components and rules of this commit; before any mention change (main at bcd6edb)
# the same sentences gave write 0.562 / 0.750 / 0.964 / 1.000 and measure 0.545 / 0.712 / 0.833 / 0.789.
# Session 14 recounted the crash, OOM, divergence and start-up priors on 1,001 labelled reports (the framework
# release first for a crash, third for an OOM and a divergence): measure went from 0.788 / 0.894 / 0.865 to
# 0.773 / 0.879 / 0.846 (one crash sentence whose mention now ties the release, one OOM's launch out of the
# first three), while the unread held-out sets gained told top-1 90 -> 91 and top-3 113 -> 119 of 147.
FLOORS = {  # split: (told top-1, told top-3, mention precision, negatives quiet)
    "write": (0.87, 0.93, 0.95, 0.95),
    "measure": (0.77, 0.85, 0.84, 0.70),
}


def _is_mention_rule(rule: str) -> bool:
    return "-mentions-" in rule or rule.startswith("mentions-")


@cache
def _diagnosis(text: str, symptom: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(cause ids best first, the first cause when a mention rule put it there) of the one-sentence report, symptom
    told."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.txt"
        path.write_text(text + "\n", encoding="utf-8")
        report = run_logs([path], symptom=symptom)
    ranked = tuple(c.id for c in report.causes)
    first = report.causes[:1]
    mentioned = tuple(c.id for c in first if any(_is_mention_rule(r) for r in c.rules))
    return ranked, mentioned


def measure(split: str) -> dict[str, Any]:
    rows = [s for s in SENTENCES if s["split"] == split]
    pos = [s for s in rows if s["cause"] != "none"]
    neg = [s for s in rows if s["cause"] == "none"]
    top1 = top3 = 0
    put = Counter()  # cause -> times a mention rule put it forward
    put_right = Counter()  # ... and it was the label
    label = Counter()
    label_top1 = Counter()
    misses = []
    for s in pos:
        ranked, mentioned = _diagnosis(s["text"], s["symptom"])
        label[s["cause"]] += 1
        if ranked[:1] == (s["cause"],):
            top1 += 1
            label_top1[s["cause"]] += 1
        else:
            misses.append((s["cause"], ranked[:3], s["source"]))
        top3 += s["cause"] in ranked[:3]
        for c in mentioned:
            put[c] += 1
            put_right[c] += c == s["cause"]
    loud = []
    for s in neg:
        _, mentioned = _diagnosis(s["text"], s["symptom"])
        for c in mentioned:
            put[c] += 1
        if mentioned:
            loud.append((s["text"][:60], mentioned))
    n_put = sum(put.values())
    return {
        "n": len(pos),
        "negatives": len(neg),
        "top1": top1 / max(len(pos), 1),
        "top3": top3 / max(len(pos), 1),
        "mention_precision": sum(put_right.values()) / n_put if n_put else 1.0,
        "negatives_quiet": 1 - len(loud) / max(len(neg), 1),
        "per_cause": {
            c: (label[c], label_top1[c], put[c], put_right[c]) for c in sorted(set(label) | set(put))
        },
        "misses": misses,
        "loud": loud,
    }


def test_the_sentences_are_labelled_and_sourced() -> None:
    assert len(SENTENCES) >= 140 and sum(s["cause"] == "none" for s in SENTENCES) >= 30
    assert len({s["text"] for s in SENTENCES}) == len(SENTENCES)
    for s in SENTENCES:
        assert s["symptom"] in SYMPTOMS, s
        assert s["cause"] in set(CAUSES) | {"none"}, s
        assert s["split"] in FLOORS, s
        assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+|https://\S+", s["source"]), s
    by_thread: dict[str, set[str]] = defaultdict(set)
    for s in SENTENCES:
        by_thread[s["source"]].add(s["split"])
    assert all(len(splits) == 1 for splits in by_thread.values())  # no thread on both sides of the split


@pytest.mark.parametrize("split", sorted(FLOORS))
def test_the_cause_named_from_sentences_meets_its_floor(split: str) -> None:
    got = measure(split)
    least_top1, least_top3, least_precision, least_quiet = FLOORS[split]
    assert got["top1"] >= least_top1, (split, round(got["top1"], 3), got["misses"])
    assert got["top3"] >= least_top3, (split, round(got["top3"], 3), got["misses"])
    assert got["mention_precision"] >= least_precision, (
        split,
        round(got["mention_precision"], 3),
        got["per_cause"],
    )
    assert got["negatives_quiet"] >= least_quiet, (split, round(got["negatives_quiet"], 3), got["loud"])


if __name__ == "__main__":  # per-cause table: label count, right at top-1, mentioned, mentioned and right
    for split in sys.argv[1:] or sorted(FLOORS):
        got = measure(split)
        print(
            f"{split}: n={got['n']} neg={got['negatives']} top1={got['top1']:.3f} top3={got['top3']:.3f} "
            f"mention_precision={got['mention_precision']:.3f} negatives_quiet={got['negatives_quiet']:.3f}"
        )
        for cause, (n, right, put, put_right) in got["per_cause"].items():
            rec = right / n if n else 0.0
            prec = put_right / put if put else float("nan")
            print(f"  {cause:26s} n={n:3d} top1={rec:.2f} mentioned={put:3d} precision={prec:.2f}")
        for m in got["misses"]:
            print("   miss", m)
        for m in got["loud"]:
            print("   loud", m)
