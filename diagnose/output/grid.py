"""The rank picture in the terminal: one cell per rank, grouped by state.

Identical grid rows are run-length collapsed, and the legend lists each state's
ranks as ranges, so 4,096 ranks where a handful differ stay a few lines.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from diagnose.output.report import RankState, Report
from diagnose.ranks import plausible_world

PALETTE = ("green", "cyan", "yellow", "magenta", "blue", "bright_green", "bright_cyan", "bright_yellow",
           "bright_magenta", "bright_blue", "white", "grey50")
HTML_PALETTE = ("#3a9d5d", "#2b8cbe", "#d9a400", "#a5499e", "#4a5fc1", "#7fc97f", "#7ec8e3", "#f0d060",
                "#d38fd0", "#8da0cb", "#bbbbbb", "#777777")
DEAD_WORDS = ("exit", "dead", "killed", "sig", "crash", "oom", "gone", "failed")
SYMBOLS = "█▓▒░#=+o%&@*"
MAX_STATES = len(PALETTE) - 1


@dataclass(frozen=True)
class StateGroup:
    """One legend entry: a state, its display colours and its ranks."""

    state: str
    symbol: str
    color: str
    html_color: str
    ranks: tuple[int, ...]
    kind: str  # see state_kind


def rank_cells(report: Report) -> list[RankState]:
    """The report's rank cells, or cells derived from the rank summary and culprits."""
    if report.rank_states:
        return sorted(report.rank_states, key=lambda c: c.rank)
    culprits = {r for cause in report.causes[:1] for r in cause.ranks}
    seen, missing = set(report.ranks.seen), set(report.ranks.missing)
    world = report.ranks.world_size or (max(seen | missing | culprits, default=-1) + 1)
    ranks = range(world) if plausible_world(world) else sorted(seen | missing | culprits)  # sparse, never a range
    return [RankState(rank=r, state="missing" if r in missing else ("seen" if r in seen else "no evidence"),
                      culprit=r in culprits) for r in ranks]


def state_kind(state: str) -> str:
    """'missing', 'killed', 'aborted', 'timed_out', 'dead' or 'alive', from the state text."""
    low = state.lower()
    if low.startswith(("missing", "no evidence", "absent")):
        return "missing"
    if "sigkill" in low or "exited -9" in low:
        return "killed"
    if "sigabrt" in low or "exited -6" in low:
        return "aborted"
    if "timed_out" in low or "timed out" in low or "timeout" in low:
        return "timed_out"
    return "dead" if any(w in low for w in DEAD_WORDS) else "alive"


# (terminal colour, HTML colour) of the states that must never look alike
KIND_COLORS = {"missing": ("grey50", "#c8c8c8"), "killed": ("red", "#d62728"), "aborted": ("dark_orange", "#ff7f0e"),
               "timed_out": ("magenta", "#9467bd"), "dead": ("bright_red", "#8c1c13")}


def group_states(cells: list[RankState]) -> list[StateGroup]:
    """States, most common first; beyond the palette, the rest share 'other'."""
    counts = Counter(c.state for c in cells)
    order = [s for s, _ in counts.most_common()]
    kept = order if len(order) <= MAX_STATES + 1 else order[:MAX_STATES]
    index = {s: i for i, s in enumerate(kept)}
    members: dict[int, list[int]] = {}
    for cell in cells:
        members.setdefault(index.get(cell.state, len(kept)), []).append(cell.rank)
    groups = []
    for i, ranks in sorted(members.items()):
        state = kept[i] if i < len(kept) else f"other ({len(order) - len(kept)} states)"
        color, html = _colors(i, state)
        kind = state_kind(state)
        symbol = "·" if kind == "missing" else SYMBOLS[i % len(SYMBOLS)]
        groups.append(StateGroup(state, symbol, color, html, tuple(ranks), kind))
    return groups


def _colors(i: int, state: str) -> tuple[str, str]:
    kind = state_kind(state)
    if kind in KIND_COLORS:
        return KIND_COLORS[kind]
    return PALETTE[i % len(PALETTE)], HTML_PALETTE[i % len(HTML_PALETTE)]


def rank_ranges(ranks: list[int] | tuple[int, ...], limit: int = 80) -> str:
    """``[0, 1, 2, 5]`` as ``0-2,5`` (cut at `limit` characters)."""
    parts: list[str] = []
    ordered = sorted(ranks)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    text = ",".join(parts)
    return text if len(text) <= limit else text[: limit - 1].rsplit(",", 1)[0] + ",…"


def _cell_text(cell: RankState, group: StateGroup) -> tuple[str, str]:
    if cell.culprit:
        return "X", f"bold white on {group.color}"
    if cell.first_failure:
        return "!", f"bold black on {group.color}"
    return group.symbol, group.color


def _grid_rows(cells: list[RankState], groups: dict[int, StateGroup], width: int) -> list[Text]:
    rows: list[Text] = []
    prev_key: tuple[tuple[str, str], ...] | None = None
    repeat_from = 0
    for start in range(0, len(cells), width):
        chunk = cells[start:start + width]
        key = tuple(_cell_text(c, groups[c.rank]) for c in chunk)
        if key == prev_key and len(chunk) == width:
            repeat_from = repeat_from or start
            continue
        if repeat_from:
            rows.append(Text(f"      ⋮ ranks {repeat_from}-{start - 1} as the row above", style="dim"))
            repeat_from = 0
        row = Text(f"{chunk[0].rank:>6} ", style="dim")
        for char, style in key:
            row.append(char, style=style)
        rows.append(row)
        prev_key = key
    if repeat_from:
        rows.append(Text(f"      ⋮ ranks {repeat_from}-{cells[-1].rank} as the row above", style="dim"))
    return rows


def render_rank_grid(report: Report, width: int = 64, live: bool = False) -> RenderableType:
    """A rich renderable: the rank-by-state grid with its legend (``live``: no 'first failure' marks)."""
    cells = rank_cells(report)
    if live:
        cells = [c.model_copy(update={"first_failure": False}) for c in cells]
    if not cells:
        return Text("no per-rank states in this report", style="dim")
    groups = group_states(cells)
    by_rank = {r: g for g in groups for r in g.ranks}
    legend = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for col in ("", "state", "ranks", "which"):
        legend.add_column(col)
    for g in groups:
        legend.add_row(Text(g.symbol, style=g.color), g.state, str(len(g.ranks)), rank_ranges(g.ranks))
    culprits = [c.rank for c in cells if c.culprit]
    first = [c.rank for c in cells if c.first_failure]
    marks = Text("X culprit  · missing" if live else "X culprit  ! first failure  · missing", style="dim")
    if culprits:
        marks.append(f"   culprit: {rank_ranges(culprits)}", style="bold red")
    if first:
        marks.append(f"   first failure: {rank_ranges(first)}", style="bold")
    title = Text(f"ranks: {len(cells)} cells, world size {report.ranks.world_size or '?'}", style="bold")
    return Group(title, *_grid_rows(cells, by_rank, width), marks, legend)
