"""Human report: the answer first, then causes, culprits, cited lines, fixes, stacks, terms, notes.

One document, two renderings: on a terminal (rich) causes sit in panels no wider than their
text, continuation lines are indented and lines are cut at a word; anywhere else (a pipe, a
file, CI) it is plain lines, unwrapped and without box characters, that grep can read.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from diagnose.output import answer as A
from diagnose.output.checkpoint_text import inventory_lines
from diagnose.output.grid import group_states, rank_cells, rank_ranges, render_rank_grid
from diagnose.output.report import Report

MAX_CAUSES = 5
MAX_EVIDENCE = 4
EVIDENCE_CHARS = 200
MAX_FRAMES = 12
_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


@dataclass
class Section:
    """A titled group of lines; ``panel`` sections are boxed on a terminal."""

    title: str
    lines: list[tuple[str, str]] = field(default_factory=list)  # (style, text)
    panel: bool = False
    title_style: str = "bold"


def build(report: Report) -> tuple[list[str], list[Section]]:
    """The document: lines above everything (dangers, the answer), then the sections in order."""
    top = [*A.danger_lines(report), A.answer_line(report)]
    sections = _causes(report)
    sections += [s for s in (_checkpoint(report), _stacks(report), _scaling(report), _next(report),
                             _notes(report), _skipped(report)) if s is not None]
    return top, sections


def _causes(report: Report) -> list[Section]:
    out: list[Section] = []
    shown: set[tuple[Any, ...]] = set()
    causes = report.causes
    if not causes:
        if report.command != "preflight":
            out.append(Section("no cause", [("", "No rule matched: no cause can be named from this evidence.")]))
        return out
    for i, c in enumerate(causes[:MAX_CAUSES], 1):
        head = f"{i}. {c.id}" + (f" (refines {c.refines})" if c.refines else "")
        head += f"  {c.confidence} {c.score:.2f}"
        if A.who(c):
            head += f"  culprit {A.who(c)}"
        if i > 1 and c.confidence == "low":
            summary = A.tidy(A.alternative_summary(c, causes[: i - 1]))
            out.append(Section(f"{head}: {summary}", title_style=_STYLE["low"]))
            continue
        sec = Section(head, [("", A.tidy(c.summary))], panel=True, title_style=_STYLE.get(c.confidence, ""))
        new = 0
        for ev in c.evidence:
            key = (ev.source, ev.line, " ".join(ev.text.split()))
            if key in shown:
                continue
            shown.add(key)
            if new == MAX_EVIDENCE:
                sec.lines.append(("dim", f"  ... {len(c.evidence) - MAX_EVIDENCE} more cited line(s): --json"))
                break
            new += 1
            where = ":".join(str(x) for x in (ev.source, ev.line) if x is not None)
            sec.lines.append(("cyan", f"  {where + ' ' if where else ''}{A.cut(ev.text, EVIDENCE_CHARS)}"))
        fix = A.drop_record_advice([c.fix], report)
        if fix:
            sec.lines.append(("bold green", f"fix: {fix[0]}"))
        out.append(sec)
    if len(causes) > MAX_CAUSES:
        out.append(Section(f"... and {len(causes) - MAX_CAUSES} less likely cause(s); --json shows all",
                           title_style="dim"))
    return out


def _checkpoint(report: Report) -> Section | None:
    lines = inventory_lines(report.checkpoint)
    return Section("checkpoint contents", [("", x) for x in lines]) if lines else None


def _stacks(report: Report) -> Section | None:
    stacks = [s for s in report.stacks if s.frames]
    if not stacks:
        return None
    sec = Section("culprit stack" + ("s" if len(stacks) > 1 else "") + " (py-spy dump layout, innermost first)")
    for s in stacks:
        sec.lines.append(("bold", f'Thread (rank {s.rank}{f", pid {s.pid}" if s.pid else ""}): '
                                  f'"{s.thread or "MainThread"}"'))
        sec.lines += [("", f"    {frame}") for frame in s.frames[:MAX_FRAMES]]
        if len(s.frames) > MAX_FRAMES:
            sec.lines.append(("dim", f"    ... {len(s.frames) - MAX_FRAMES} outer frame(s)"))
    return sec


def _ms(value: Any) -> str:
    return f"{value * 1e3:.1f}" if isinstance(value, (int, float)) else "-"


def _scaling(report: Report) -> Section | None:
    runs = [r for r in (report.scaling or {}).get("runs") or [] if isinstance(r, dict)]
    if not runs:
        return None
    terms = sorted({t for r in runs for t in (r.get("terms") or {})})
    sec = Section("step-time terms (ms per step)")
    cols = ["run", "N", "step", *terms, "limit"]
    rows = [[str(r.get("run")), str(r.get("world_size") or "-"), _ms(r.get("step_time")),
             *[_ms((r.get("terms") or {}).get(t)) for t in terms], str(r.get("limit") or "-")] for r in runs]
    widths = [max(len(x) for x in col) for col in zip(cols, *rows, strict=True)]
    for row in [cols, *rows]:
        sec.lines.append(("", "  " + "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()))
    for flag in (report.scaling or {}).get("flags") or []:
        sec.lines.append(("yellow", f"  {flag}"))
    return sec


def _next(report: Report) -> Section | None:
    items = A.unique(A.drop_record_advice(list(report.next), report))
    if not items:
        return None
    return Section("to collect next time", [("", f"  - {x}") for x in items])


def _notes(report: Report) -> Section | None:
    danger = set(A.danger_lines(report))
    hidden = set(_checklist(report)) if report.command == "preflight" else set()
    items = [n for n in A.unique(report.notes) if n not in danger and n not in hidden]
    if not items:
        return None
    return Section("notes", [("", f"  - {x}") for x in items])


def _checklist(report: Report) -> list[str]:
    return [n for n in report.notes if n.startswith(("preflight ", "PASS ", "FAIL ", "skip "))]


def _skipped(report: Report) -> Section | None:
    if not report.skipped:
        return None
    sec = Section(f"{len(report.skipped)} input(s) skipped")
    sec.lines += [("dim", f"  {s.source}: {s.reason}") for s in report.skipped[:10]]
    if len(report.skipped) > 10:
        sec.lines.append(("dim", f"  ... {len(report.skipped) - 10} more: --json"))
    return sec


def _grid_plain(report: Report) -> list[str]:
    """The rank picture as lines: one per state, with its ranks."""
    cells = rank_cells(report)
    if len(cells) < 2:
        return []
    live = report.command == "hang"
    out = [f"ranks: world size {report.ranks.world_size or '?'}, seen {len(report.ranks.seen)}"
           + (f", missing {rank_ranges(report.ranks.missing)}" if report.ranks.missing else "")]
    for g in group_states(cells):
        out.append(f"  {len(g.ranks):>5} rank(s) {rank_ranges(g.ranks)}: {g.state}")
    culprits = [c.rank for c in cells if c.culprit]
    first = [c.rank for c in cells if c.first_failure]
    if culprits:
        out.append(f"  culprit: {rank_ranges(culprits)}")
    if first and not live:
        out.append(f"  first failure: {rank_ranges(first)}")
    return out


def render_plain(report: Report) -> str:
    """The report as plain lines (no wrapping, no box characters)."""
    top, sections = build(report)
    lines = list(top)
    for sec in sections[: len(_causes(report))]:
        lines += ["", sec.title, *[t for _, t in sec.lines]]
    grid = _grid_plain(report)
    if grid:
        lines += ["", *grid]
    for sec in sections[len(_causes(report)):]:
        lines += ["", sec.title, *[t for _, t in sec.lines]]
    return "\n".join(lines) + "\n"


def _rich_lines(sec: Section, width: int) -> list[Text]:
    out = []
    for style, text in sec.lines:
        indent = len(text) - len(text.lstrip(" ")) + 2
        body = text.lstrip(" ")
        first = True
        while body:
            room = max(20, width - (len(text) - len(body) if first else indent))
            if cell_len(body) <= room:
                chunk, body = body, ""
            else:
                cut = body.rfind(" ", 0, room)
                cut = cut if cut > room // 3 else room
                chunk, body = body[:cut], body[cut:].lstrip(" ")
            pad = (len(text) - len(text.lstrip(" "))) if first else indent
            out.append(Text(" " * pad + chunk, style=style))
            first = False
    return out


def print_rich(report: Report, console: Console) -> None:
    """The report on a terminal: the answer in bold, causes in fitted panels, the rank grid."""
    top, sections = build(report)
    for line in top:
        console.print(Text(line, style="bold red" if line.startswith("DANGER") else "bold"), soft_wrap=False)
    n_causes = len(_causes(report))
    inner = max(40, console.width - 4)
    for k, sec in enumerate(sections):
        if k == n_causes and len(report.rank_states) > 1:
            console.print(render_rank_grid(report, live=report.command == "hang"))
        if sec.panel:
            body = Text("\n").join(_rich_lines(sec, inner))
            console.print(Panel(body, title=Text(sec.title, style=sec.title_style), title_align="left",
                                expand=False))
            continue
        console.print(Text(sec.title, style=sec.title_style))
        for line in _rich_lines(sec, console.width):
            console.print(line)
    if n_causes == len(sections) and len(report.rank_states) > 1:
        console.print(render_rank_grid(report, live=report.command == "hang"))


def console_for(stream: TextIO | None = None, color: str = "auto") -> Console | None:
    """A rich console for a terminal (or ``--color always``); None means plain lines."""
    stream = stream or sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    if color == "never" or (color == "auto" and not tty):
        return None if not tty else Console(file=stream, color_system=None, highlight=False)
    no_color = color == "auto" and bool(os.environ.get("NO_COLOR"))
    return Console(file=stream, force_terminal=True, highlight=False,
                   color_system=None if no_color else "auto")


def print_report(report: Report, console: Console | None = None, *, color: str = "auto",
                 stream: TextIO | None = None) -> None:
    """Print a report for people: rich on a terminal, plain lines elsewhere."""
    if console is None:
        console = console_for(stream, color)
    if console is None:
        (stream or sys.stdout).write(render_plain(report))
        return
    print_rich(report, console)


__all__ = ["print_report", "render_plain", "print_rich", "console_for", "build"]
