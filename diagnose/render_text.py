"""Human report in the terminal (rich): ranked causes, culprit ranks, cited lines, the fix."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

_COLORS = {"high": "bold red", "medium": "yellow", "low": "dim"}


def print_report(data: dict[str, Any], console: Console | None = None) -> None:
    """Print a JSON report dict for people."""
    console = console or Console()
    ranks = data.get("ranks") or {}
    head = Text(f"diagnose {data.get('command') or ''}: symptom {data.get('symptom') or 'unknown'}", style="bold")
    if ranks.get("world_size"):
        head.append(f"   world size {ranks['world_size']}, seen {len(ranks.get('seen', []))}"
                    + (f", missing {_ranks(ranks.get('missing', []))}" if ranks.get("missing") else ""))
    console.print(head)
    causes = data.get("causes") or []
    if not causes:
        console.print("No rule matched: no cause can be named from this evidence.")
    for i, c in enumerate(causes[:5], 1):
        title = Text(f"{i}. {c['id']}", style=_COLORS.get(c["confidence"], ""))
        title.append(f"  score {c['score']:.2f} ({c['confidence']})", style="dim")
        if c.get("ranks"):
            title.append(f"  culprit rank(s) {_ranks(c['ranks'])}", style="bold")
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
    if data.get("rank_states") and len(data["rank_states"]) > 1:
        _grid(console, data["rank_states"])
    for item in data.get("next") or []:
        console.print(f"[bold]next time:[/bold] {item}")
    if data.get("skipped"):
        console.print(f"[dim]{len(data['skipped'])} input(s) skipped, e.g. "
                      f"{data['skipped'][0]['source']}: {data['skipped'][0]['reason']}[/dim]")


def _grid(console: Console, states: list[dict[str, Any]]) -> None:
    try:
        from diagnose.render_grid import render_rank_grid_data
    except ImportError:
        render_rank_grid_data = None
    if render_rank_grid_data is not None:
        console.print(render_rank_grid_data(states))
        return
    table = Table(title="ranks", show_header=True)
    table.add_column("state")
    table.add_column("ranks")
    groups: dict[str, list[int]] = {}
    for s in states:
        groups.setdefault(s["state"], []).append(s["rank"])
    for state, rs in groups.items():
        table.add_row(state, _ranks(rs))
    console.print(table)


def _ranks(ranks: list[int]) -> str:
    from diagnose.predicates import format_ranks

    return format_ranks(ranks)
