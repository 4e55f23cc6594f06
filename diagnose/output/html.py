"""One self-contained HTML report: rank grid (canvas), first-failure timeline, ranked causes.

No network access is needed to view it: CSS and JS are inline and a
Content-Security-Policy forbids every fetch. The grid is sent as runs of
(first rank, count, state), so thousands of ranks cost a few kilobytes.
"""

from __future__ import annotations

import json
import time
from html import escape
from pathlib import Path
from typing import Any

from diagnose.output import answer as A
from diagnose.output.grid import group_states, rank_cells, rank_ranges
from diagnose.output.redact import redact_report_model
from diagnose.output.report import EvidenceRef, Report

COLUMNS = 64
LABEL_MAX = 256  # up to this many ranks, every cell shows its rank number

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555}.cause{border:1px solid #ccc;border-radius:6px;padding:10px 14px;margin:10px 0}
.cause h3{margin:0;font-size:15px}.score{float:right;color:#555}.high{color:#b00}.medium{color:#a60}
pre{background:#f6f6f6;padding:6px 8px;overflow-x:auto;margin:4px 0;white-space:pre-wrap}
.fix{background:#eef7ee;padding:6px 8px;border-left:3px solid #3a9d5d}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top}
#legend span.sw{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:middle}
.danger{color:#fff;background:#b00;padding:6px 8px;font-weight:bold}.made{font-size:12px}
#tip{position:fixed;background:#222;color:#fff;padding:2px 6px;border-radius:3px;font-size:12px;display:none}
"""

_JS = """
(function () {
  var t0 = performance.now();
  var d = JSON.parse(document.getElementById('grid-data').textContent);
  var n = d.n, labels = n <= d.label_max, cols = labels ? Math.min(n, 16) : d.cols;
  var size = labels ? 30 : (n > 1024 ? 10 : 16), rows = Math.ceil(n / cols), left = labels ? 0 : 44;
  var cv = document.getElementById('grid'), dpr = window.devicePixelRatio || 1;
  cv.width = (left + cols * size) * dpr; cv.height = rows * size * dpr;
  cv.style.width = (left + cols * size) + 'px'; cv.style.height = rows * size + 'px';
  var ctx = cv.getContext('2d'); ctx.scale(dpr, dpr); ctx.translate(left, 0);
  var rank = new Int32Array(n), st = new Int16Array(n), i = 0;
  d.runs.forEach(function (run) {
    for (var k = 0; k < run[1]; k++) { rank[i] = run[0] + k; st[i] = run[2]; i++; }
  });
  for (var j = 0; j < n; j++) {
    ctx.fillStyle = d.colors[st[j]];
    ctx.fillRect((j % cols) * size, Math.floor(j / cols) * size, size - 1, size - 1);
  }
  ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
  d.culprit.forEach(function (j) {
    ctx.strokeRect((j % cols) * size - 1, Math.floor(j / cols) * size - 1, size + 1, size + 1);
  });
  ctx.fillStyle = '#fff';
  d.first.forEach(function (j) {
    var q = Math.max(2, size / 5);
    ctx.fillRect((j % cols) * size + 1, Math.floor(j / cols) * size + 1, q, q);
  });
  ctx.textBaseline = 'middle';
  if (labels) {  // every rank's number in its cell
    ctx.font = '11px system-ui,sans-serif'; ctx.textAlign = 'center';
    for (var a = 0; a < n; a++) {
      ctx.fillStyle = d.ink[st[a]];
      ctx.fillText(String(rank[a]), (a % cols) * size + (size - 1) / 2, Math.floor(a / cols) * size + (size - 1) / 2);
    }
  } else {  // the first rank of every row in the margin
    ctx.font = '10px system-ui,sans-serif'; ctx.textAlign = 'right'; ctx.fillStyle = '#555';
    for (var b = 0; b < rows; b++) { ctx.fillText(String(rank[b * cols]), -4, b * size + size / 2); }
  }
  var tip = document.getElementById('tip');
  cv.addEventListener('mousemove', function (e) {
    var r = cv.getBoundingClientRect();
    var j = Math.floor((e.clientY - r.top) / size) * cols + Math.floor((e.clientX - r.left - left) / size);
    if (j < 0 || j >= n) { tip.style.display = 'none'; return; }
    tip.textContent = 'rank ' + rank[j] + ': ' + d.states[st[j]];
    tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
    tip.style.display = 'block';
  });
  cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  function mark() {
    document.body.setAttribute('data-grid-drawn', String(n));
    document.body.setAttribute('data-grid-labels', labels ? 'cells' : 'rows');
    document.body.setAttribute('data-grid-top', cv.getBoundingClientRect().top.toFixed(0));
    document.body.setAttribute('data-grid-ms', (performance.now() - t0).toFixed(1));
    document.body.setAttribute('data-render-ms', performance.now().toFixed(1));
    document.body.setAttribute('data-grid-ready', 'yes');
  }
  mark();  // canvas drawing is synchronous: the grid is complete here
  requestAnimationFrame(mark);  // and once more after the first paint
})();
"""


def grid_data(report: Report) -> dict[str, Any]:
    """The grid as runs of consecutive ranks in one state, plus marked cell indices."""
    cells = rank_cells(report)
    groups = group_states(cells)
    state_of = {r: i for i, g in enumerate(groups) for r in g.ranks}
    runs: list[list[int]] = []
    for cell in cells:
        s = state_of[cell.rank]
        last = runs[-1] if runs else None
        if last and last[2] == s and last[0] + last[1] == cell.rank:
            last[1] += 1
        else:
            runs.append([cell.rank, 1, s])
    return {
        "n": len(cells), "cols": COLUMNS, "runs": runs,
        "states": [g.state for g in groups], "colors": [g.html_color for g in groups],
        "ink": [_ink(g.html_color) for g in groups], "label_max": LABEL_MAX,
        "culprit": [i for i, c in enumerate(cells) if c.culprit],
        "first": [] if report.command == "hang" else [i for i, c in enumerate(cells) if c.first_failure],
    }


def _ink(color: str) -> str:
    """Black or white text, whichever reads on ``color`` (#rrggbb)."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#fff"


def _evidence(ref: EvidenceRef) -> str:
    where = ":".join(str(x) for x in (ref.source, ref.line) if x is not None)
    who = " ".join(x for x in (f"rank {ref.rank}" if ref.rank is not None else "", ref.host or "") if x)
    head = escape(" · ".join(x for x in (where, who) if x))
    return f"<div class=meta>{head}</div><pre>{escape(ref.text)}</pre>"


def _causes(report: Report) -> str:
    if not report.causes:
        return "<p>No rule matched. What was collected is listed below.</p>"
    out = []
    shown: set[tuple[object, ...]] = set()
    for n, c in enumerate(report.causes, 1):
        who = f"culprit ranks {rank_ranges(c.ranks)}" if c.ranks else ""
        if c.nodes:
            who += (" · " if who else "") + "nodes " + ", ".join(c.nodes)
        refines = f" (refines {escape(c.refines)})" if c.refines else ""
        fresh = [e for e in c.evidence if (e.source, e.line, e.text) not in shown]
        shown.update((e.source, e.line, e.text) for e in c.evidence)
        summary = A.tidy(A.alternative_summary(c, report.causes[: n - 1]) if n > 1 else c.summary)
        fix = A.drop_record_advice([c.fix], report)
        out.append(
            f"<div class='cause c{n}'><span class='score {c.confidence}'>score {c.score:.2f} · {c.confidence}</span>"
            f"<h3>{n}. {escape(c.id)}{refines}</h3><p>{escape(summary)}</p>"
            f"<div class=meta>{escape(who)}</div>"
            + "".join(_evidence(e) for e in fresh)
            + ("" if fresh or n == 1 else "<div class=meta>same evidence as above</div>")
            + (f"<p class=fix><b>First fix:</b> {escape(fix[0])}</p>" if fix else "")
            + (f"<div class=meta>rules: {escape(', '.join(c.rules))}</div>" if c.rules else "")
            + "</div>")
    return "".join(out)


def _stacks(report: Report) -> str:
    out = []
    for s in report.stacks:
        if s.frames:
            body = "\n".join([f'Thread (rank {s.rank}): "{s.thread or "MainThread"}"', *("    " + f for f in s.frames)])
            out.append(f"<h2>Rank {s.rank} stack</h2><pre>{escape(body)}</pre>")
    return "".join(out)


def _timeline(report: Report) -> str:
    if not report.timeline:
        return "<p class=meta>No timed first failures in the evidence.</p>"
    rows = "".join(
        f"<tr><td>{n}</td><td>{'' if e.rank is None else e.rank}</td><td>{escape(e.host or '')}</td>"
        f"<td>{escape(':'.join(str(x) for x in (e.source, e.line) if x is not None))}</td>"
        f"<td><code>{escape(e.text)}</code></td></tr>"
        for n, e in enumerate(report.timeline, 1))
    return f"<table><tr><th>#</th><th>rank</th><th>host</th><th>where</th><th>line</th></tr>{rows}</table>"


def _legend(data: dict[str, Any], report: Report) -> str:
    groups = group_states(rank_cells(report))
    items = "".join(
        f"<tr><td><span class=sw style='background:{g.html_color}'></span>{escape(g.state)}</td>"
        f"<td>{len(g.ranks)}</td><td>{escape(rank_ranges(g.ranks))}</td></tr>" for g in groups)
    return (f"<table id=legend><tr><th>state</th><th>ranks</th><th>which</th></tr>{items}</table>"
            "<p class=meta>black frame: culprit rank · white corner: first failure</p>")


def render_html(report: Report, inputs: list[str] | None = None, version: str = "", when: str | None = None) -> str:
    """The whole page as a string: the answer as title, the rank grid, causes, timeline, notes."""
    data = grid_data(report)
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    ranks = report.ranks
    title = A.answer_line(report, limit=200)
    when = when or time.strftime("%Y-%m-%d %H:%M:%S %Z")
    danger = "".join(f"<p class=danger>{escape(d)}</p>" for d in A.danger_lines(report))
    nxt = A.unique(A.drop_record_advice(list(report.next), report))
    lists = "".join(
        f"<h2>{title_}</h2><ul>{''.join(f'<li>{escape(x)}</li>' for x in items)}</ul>"
        for title_, items in (("What to collect next", nxt), ("Notes", A.unique(report.notes)),
                              ("Skipped inputs", [f"{s.source}: {s.reason}" for s in report.skipped]))
        if items)
    made = " · ".join(x for x in (f"diagnose {version}" if version else "diagnose", when,
                                  ("inputs: " + ", ".join(inputs)) if inputs else "") if x)
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>{danger}"
        f"<div class=meta>{escape(report.command or 'diagnose')} · symptom {escape(report.symptom or 'undecided')} · "
        f"world size {ranks.world_size or 'unknown'} · seen {len(ranks.seen)} · "
        f"missing {escape(rank_ranges(ranks.missing) or 'none')}</div>"
        f"<div class='meta made'>{escape(made)}</div>"
        f"<h2>Ranks ({data['n']})</h2><canvas id=grid></canvas>{_legend(data, report)}"
        f"<h2>Likely causes</h2>{_causes(report)}{_stacks(report)}"
        f"<h2>First failures, in time order</h2>{_timeline(report)}{lists}"
        f"<div id=tip></div><script type=application/json id=grid-data>{payload}</script>"
        f"<script>{_JS}</script></body></html>")


def write_html(report: Report, path: Path, redact: bool = False, inputs: list[str] | None = None,
               version: str = "") -> None:
    """Write the self-contained HTML report; `redact` replaces identifiers first."""
    if redact:
        report = redact_report_model(report)
    page = render_html(report, inputs=inputs, version=version)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
