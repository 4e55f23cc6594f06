"""What a report mentions -> Mention evidence, one per component and line (``rules/artifacts/mentions.yaml``).

A report with no error line still says what it is about: "the model has BatchNorm layers", "the two machines
talk over 10GbE", "rank 0 tokenises the dataset first". Sentences are the cue reader's prose lines
(``cues.prose_lines``); short command, code and config lines are read too for the components whose mention
there means something (``nn.BatchNorm2d(``, ``--batch-size 2``, ``NCCL_SOCKET_IFNAME=eth0``). Lines a program
printed are not mentions. Rules pair a component with a reported or inferred symptom.
"""

from __future__ import annotations

from typing import Any

from diagnose.evidence import Mention
from diagnose.probes.artifacts.cues import prose_lines
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import family

__all__ = ["parse"]


def _lines(src: Source) -> list[tuple[int, str, str]]:
    """(line number, text, prose | code) of the lines that may mention a component."""
    spec, cues = family("mentions"), family("cues")
    tables = spec.tables
    prose = dict(prose_lines(src, cues))
    printed, command = spec.rx("printed"), spec.rx("command_like")
    out = []
    for no, raw in enumerate(src.lines[: tables["max_lines"]], 1):
        if no in prose and not command.search(prose[no]):
            out.append((no, prose[no], "prose"))
            continue
        line = raw.strip()
        if line and len(line) <= tables["max_code_len"] and not printed.search(line):
            out.append((no, line, "code"))
    return out


def parse(src: Source) -> list[Any]:
    """The first few mentions of each component the file's sentences (and, where it counts, its command, code and
    config lines) make."""
    spec = family("mentions")
    tables = spec.tables
    components = tables["components"]
    cap = tables["max_per_component"]
    out: list[Any] = []
    seen: dict[str, int] = {}
    for no, text, where in _lines(src):
        for name, how in components.items():
            if seen.get(name, 0) >= cap or (how["where"] != "any" and how["where"] != where):
                continue
            m = spec.rx(name).search(text)
            if m is None or (how.get("unless") and spec.rx(how["unless"]).search(text)):
                continue
            seen[name] = seen.get(name, 0) + 1
            out.append(
                Mention(
                    component=name,
                    words=m.group(0)[:80],
                    where=where,
                    provenance=src.prov(no),
                    rank=src.rank,
                    text=text[:300],
                )
            )
    return out
