"""The report as Markdown, to paste into a GitHub issue (redacted unless the user says otherwise)."""

from __future__ import annotations

from diagnose.output import answer as A
from diagnose.output.grid import group_states, rank_cells, rank_ranges
from diagnose.output.report import Report

FENCE = "```"


def _code(text: str) -> str:
    """Inline code that survives backticks inside it."""
    ticks = "``" if "`" in text else "`"
    return f"{ticks}{text.replace(chr(10), ' ')}{ticks}"


def render_markdown(report: Report, version: str = "", inputs: list[str] | None = None) -> str:
    """Markdown for people: the answer as a heading, causes, rank states, stacks, notes."""
    lines = [f"### {A.answer_line(report, limit=200)}", ""]
    lines += [f"> **{d}**" for d in A.danger_lines(report)]
    shown: set[tuple[object, ...]] = set()
    for i, c in enumerate(report.causes[:5], 1):
        culprit = f", culprit {A.who(c)}" if A.who(c) else ""
        if i > 1 and c.confidence == "low":
            lines.append(f"{i}. **{c.id}** ({c.confidence} {c.score:.2f}{culprit}): "
                         f"{A.tidy(A.alternative_summary(c, report.causes[: i - 1]))}")
            lines.append("")
            continue
        lines.append(f"{i}. **{c.id}** ({c.confidence} {c.score:.2f}{culprit}): {A.tidy(c.summary)}")
        evidence = []
        for ev in c.evidence:
            key = (ev.source, ev.line, ev.text)
            if key not in shown:
                shown.add(key)
                where = ":".join(str(x) for x in (ev.source, ev.line) if x is not None)
                evidence.append(f"{where}: {ev.text}" if where else ev.text)
        if evidence:
            lines += ["", f"   {FENCE}text", *[f"   {A.cut(e, 400)}" for e in evidence[:6]], f"   {FENCE}", ""]
        fix = A.drop_record_advice([c.fix], report)
        if fix:
            lines.append(f"   First fix: {fix[0]}")
        lines.append("")
    if not report.causes:
        lines += ["No rule matched this evidence.", ""]
    cells = rank_cells(report)
    if len(cells) > 1:
        lines += ["| ranks | state |", "| --- | --- |"]
        lines += [f"| {rank_ranges(g.ranks)} | {g.state.replace('|', '/')} |" for g in group_states(cells)]
        lines.append("")
    for s in report.stacks:
        lines += [f"<details><summary>rank {s.rank} stack</summary>", "", f"{FENCE}text",
                  f'Thread (rank {s.rank}): "{s.thread or "MainThread"}"', *[f"    {f}" for f in s.frames[:20]],
                  FENCE, "", "</details>", ""]
    nxt = A.unique(A.drop_record_advice(list(report.next), report))
    if nxt:
        lines += ["**To collect next time**", "", *[f"- {x}" for x in nxt], ""]
    notes = [n for n in A.unique(report.notes) if n not in A.danger_lines(report)]
    if notes:
        lines += ["<details><summary>notes</summary>", "", *[f"- {_code(n)}" for n in notes], "", "</details>", ""]
    if report.skipped:
        lines += [f"{len(report.skipped)} input(s) skipped: "
                  + "; ".join(f"{_code(s.source)} ({s.reason})" for s in report.skipped[:5]), ""]
    foot = f"_diagnose {version}_" if version else "_diagnose_"
    if inputs:
        foot += " on " + ", ".join(_code(i) for i in inputs[:5])
    lines.append(foot)
    return "\n".join(lines) + "\n"
