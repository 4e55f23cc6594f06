"""Human report in the terminal (rich): ranked causes, culprit ranks, cited lines, the fix."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from diagnose.output.checkpoint_text import danger_lines, inventory_lines
from diagnose.output.grid import render_rank_grid
from diagnose.output.report import Report

_COLORS = {"high": "bold red", "medium": "yellow", "low": "dim"}


def print_report(report: Report, console: Console | None = None) -> None:
    """Print a report for people: causes, culprits, cited lines, fix, and the rank picture."""
    console = console or Console()
    data = report.to_json_dict()
    for line in danger_lines(data.get("checkpoint")):  # a dangerous pickle comes before anything else
        console.print(line, style="bold red", markup=False, highlight=False)
    ranks = data.get("ranks") or {}
    head = Text(f"diagnose {data.get('command') or ''}: symptom {data.get('symptom') or 'unknown'}", style="bold")
    if ranks.get("world_size"):
        head.append(f"   world size {ranks['world_size']}, seen {len(ranks.get('seen', []))}"
                    + (f", missing {_ranks(ranks.get('missing', []))}" if ranks.get("missing") else ""))
    console.print(head)
    causes = data.get("causes") or []
    if not causes and data.get("command") == "preflight":
        console.print("No check failed.")
    elif not causes:
        console.print("No rule matched: no cause can be named from this evidence.")
    for i, c in enumerate(causes[:5], 1):
        title = Text(f"{i}. {c['id']}", style=_COLORS.get(c["confidence"], ""))
        title.append(f"  score {c['score']:.2f} ({c['confidence']})", style="dim")
        if c.get("ranks"):
            title.append(f"  culprit rank(s) {_ranks(c['ranks'])}", style="bold")
        if i > 1 and c["confidence"] == "low":  # a weaker alternative: one line, the evidence is shown above
            title.append(f"  {c['summary'][:160]}", style="dim")
            console.print(title)
            continue
        body = Text(c["summary"] + "\n")
        for ev in c.get("evidence", [])[:4]:
            where = f"{ev.get('source') or ''}:{ev.get('line') or ''}".strip(":")
            body.append(f"  {where} ", style="cyan")
            body.append((ev.get("text") or "").strip()[:200] + "\n", style="dim")
        body.append("fix: ", style="bold green")
        body.append(c["fix"])
        console.print(Panel(body, title=title, title_align="left", expand=True))
    if len(causes) > 5:
        console.print(f"... and {len(causes) - 5} less likely cause(s); --json shows all.")
    for line in inventory_lines(data.get("checkpoint")):
        console.print(line, markup=False, highlight=False)
    if len(report.rank_states) > 1:
        console.print(render_rank_grid(report))
    for item in data.get("next") or []:
        console.print(f"[bold]next time:[/bold] {item}")
    if data.get("skipped"):
        console.print(f"[dim]{len(data['skipped'])} input(s) skipped, e.g. "
                      f"{data['skipped'][0]['source']}: {data['skipped'][0]['reason']}[/dim]")


def _ranks(ranks: list[int]) -> str:
    from diagnose.ranks import format_ranks

    return format_ranks(ranks)
