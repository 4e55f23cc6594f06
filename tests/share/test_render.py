"""The rank picture: terminal grid and HTML report, the latter opened in real headless Chromium."""

from __future__ import annotations

import base64
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from diagnose.output.grid import render_rank_grid
from diagnose.output.html import render_html, write_html
from diagnose.output.report import Cause, EvidenceRef, RankState, RankSummary, Report

WORLD = 4096
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def big_report(world: int = WORLD, states: int = 3) -> Report:
    cells = [RankState(rank=r, state=f"all_reduce #{41 + r % states}") for r in range(world)]
    cells[1234] = RankState(rank=1234, state="exited -9 (SIGKILL)", culprit=True, first_failure=True)
    cells[77] = RankState(rank=77, state="missing")
    ev = [EvidenceRef(source="rank1234.log", line=12, rank=1234, text="Signal 9 (SIGKILL) received by PID 4242")]
    return Report(
        symptom="hang_mid_run", rank_states=cells, timeline=ev,
        ranks=RankSummary(world_size=world, seen=[r for r in range(world) if r != 77], missing=[77]),
        causes=[Cause(id="rank_failure", score=0.93, confidence="high", ranks=[1234], evidence=ev,
                      summary="rank 1234 was killed; the others wait in all_reduce #41",
                      fix="find why rank 1234 died (dmesg, OOM killer)")])


def test_terminal_grid_is_compact_for_4096_ranks() -> None:
    console = Console(record=True, width=120, color_system=None)
    console.print(render_rank_grid(big_report(states=1)))
    text = console.export_text()
    assert len(text.splitlines()) < 25
    assert "X" in text and "1234" in text and "77" in text and "as the row above" in text


def test_html_stays_small_for_4096_ranks_in_many_states() -> None:
    worst = render_html(big_report(states=4096))  # no two neighbours alike: no run-length gain
    assert len(worst.encode()) < 3_000_000
    assert len(render_html(big_report(states=1)).encode()) < 100_000
    assert "http://" not in worst and "https://" not in worst and "default-src 'none'" in worst


def _chromium(chromium: str, args: list[str], url: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                               "--v=0", *args, url], capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def test_html_renders_in_headless_chromium(chromium: str, tmp_path: Path, record_property) -> None:
    page = tmp_path / "report.html"
    write_html(big_report(), page)
    dom = _chromium(chromium, ["--dump-dom", "--virtual-time-budget=5000"], page.as_uri())
    assert _console_errors(dom.stderr) == []
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    attrs = dict(re.findall(r'(data-[\w-]+)="([^"]*)"', body))
    assert "<title>rank 1234: rank_failure (SIGKILL) [high, 0.93]: rank 1234 was killed" in dom.stdout
    assert attrs["data-grid-ready"] == "yes"
    assert attrs["data-grid-drawn"] == str(WORLD)
    render_ms = float(attrs["data-render-ms"])  # a measurement, recorded below: no timed assertion on a shared machine
    assert render_ms > 0
    assert "rank_failure" in dom.stdout and "find why rank 1234 died" in dom.stdout
    record_property("render_ms", render_ms)
    record_property("html_bytes", page.stat().st_size)
    print(f"\nHTML 4096 ranks: {page.stat().st_size} bytes, rendered at {render_ms} ms "
          f"(grid drawn in {attrs['data-grid-ms']} ms)")

    shot = tmp_path / "shot.png"
    result = _chromium(chromium, ["--hide-scrollbars", "--window-size=1200,1400", f"--screenshot={shot}"],
                       page.as_uri())
    assert _console_errors(result.stderr) == []
    assert shot.exists() and shot.stat().st_size > 10_000, "screenshot missing or blank"
    stats = _pixel_stats(chromium, shot, tmp_path)
    assert stats["colors"] >= 4, stats  # white page, text, the grid's green and the dead rank's red
    assert stats["green"] > 100_000 and stats["red"] > 20, stats


def _pixel_stats(chromium: str, png: Path, tmp_path: Path) -> dict[str, int]:
    """Decode the screenshot in Chromium itself: distinct colours, grid-green and dead-red pixel counts."""
    data = base64.b64encode(png.read_bytes()).decode()
    check = tmp_path / "check.html"
    check.write_text(
        "<!DOCTYPE html><html><head><title>pending</title></head><body><script>"
        "var img=new Image();img.onload=function(){var c=document.createElement('canvas');"
        "c.width=img.width;c.height=img.height;var x=c.getContext('2d');x.drawImage(img,0,0);"
        "var p=x.getImageData(0,0,c.width,c.height).data,seen=new Set(),g=0,r=0;"
        "for(var i=0;i<p.length;i+=4){seen.add((p[i]<<16)|(p[i+1]<<8)|p[i+2]);"
        "if(p[i]==0x3a&&p[i+1]==0x9d&&p[i+2]==0x5d)g++;if(p[i]==0xd6&&p[i+1]==0x27&&p[i+2]==0x28)r++;}"
        "document.title='stats '+seen.size+' '+g+' '+r;};"
        f"img.src='data:image/png;base64,{data}';</script></body></html>")
    dom = _chromium(chromium, ["--dump-dom", "--virtual-time-budget=5000"], check.as_uri())
    m = re.search(r"<title>stats (\d+) (\d+) (\d+)</title>", dom.stdout)
    if m is None:
        pytest.fail(f"pixel check page did not finish: {dom.stdout[:300]} {dom.stderr[-500:]}")
    return {"colors": int(m.group(1)), "green": int(m.group(2)), "red": int(m.group(3))}


def _count_colors(chromium: str, png: Path, tmp_path: Path, colors: dict[str, str]) -> dict[str, int]:
    """Pixels of each exact colour in a screenshot, decoded in Chromium itself."""
    data = base64.b64encode(png.read_bytes()).decode()
    wanted = ",".join(f"['{k}',{int(v[1:], 16)}]" for k, v in colors.items())
    check = tmp_path / "colors.html"
    check.write_text(
        "<!DOCTYPE html><html><head><title>pending</title></head><body><script>"
        f"var want=[{wanted}],img=new Image();img.onload=function(){{var c=document.createElement('canvas');"
        "c.width=img.width;c.height=img.height;var x=c.getContext('2d');x.drawImage(img,0,0);"
        "var p=x.getImageData(0,0,c.width,c.height).data,n={};want.forEach(function(w){n[w[0]]=0;});"
        "for(var i=0;i<p.length;i+=4){var v=(p[i]<<16)|(p[i+1]<<8)|p[i+2];"
        "want.forEach(function(w){if(w[1]==v)n[w[0]]++;});}"
        "document.title='counts '+JSON.stringify(n);};"
        f"img.src='data:image/png;base64,{data}';</script></body></html>")
    dom = _chromium(chromium, ["--dump-dom", "--virtual-time-budget=5000"], check.as_uri())
    m = re.search(r"<title>counts (.*?)</title>", dom.stdout)
    if m is None:
        pytest.fail(f"colour check page did not finish: {dom.stdout[:300]}")
    import html as _html
    import json as _json

    return _json.loads(_html.unescape(m.group(1)))


def test_html_answer_title_labelled_grid_above_the_fold_distinct_states(chromium: str, tmp_path: Path) -> None:
    states = ["all_reduce #4120 timed_out", "exited -6 (SIGABRT)", "exited -9 (SIGKILL)", "missing",
              "all_reduce #4120 timed_out", "all_reduce #4120 timed_out"]
    cells = [RankState(rank=r, state=s, culprit=r == 2, first_failure=r == 1) for r, s in enumerate(states)]
    ev = [EvidenceRef(source="console.log", line=16, rank=2, text="Signal 9 (SIGKILL) received by PID 2103")]
    report = Report(command="logs", symptom="hang_mid_run", rank_states=cells, timeline=ev,
                    ranks=RankSummary(world_size=6, seen=[0, 1, 2, 4, 5], missing=[3]),
                    causes=[Cause(id="rank_failure", score=0.85, confidence="high", ranks=[2], evidence=ev,
                                  summary="rank 2 ended with SIGKILL while the others waited", fix="check dmesg"),
                            Cause(id="host_memory", score=0.26, confidence="low", ranks=[2], evidence=ev,
                                  summary="rank 2 ended with SIGKILL while the others waited (the same evidence "
                                          "also fits host_memory)", fix="lower host memory use")])
    page = tmp_path / "report.html"
    write_html(report, page, inputs=["console.log"], version="9.9.9")
    text = page.read_text()
    assert "<title>rank 2: rank_failure (SIGKILL) [high, 0.85]: rank 2 ended with SIGKILL" in text
    assert "diagnose 9.9.9" in text and "inputs: console.log" in text
    assert text.count("Signal 9 (SIGKILL) received by PID 2103") == 2  # the cause and the timeline, not the alternative
    dom = _chromium(chromium, ["--dump-dom", "--virtual-time-budget=5000", "--window-size=1200,900"], page.as_uri())
    attrs = dict(re.findall(r'(data-[\w-]+)="([^"]*)"', re.search(r"<body[^>]*>", dom.stdout).group(0)))
    assert attrs["data-grid-labels"] == "cells" and int(attrs["data-grid-top"]) < 500, attrs
    shot = tmp_path / "shot.png"
    _chromium(chromium, ["--hide-scrollbars", "--window-size=1200,900", f"--screenshot={shot}"], page.as_uri())
    counts = _count_colors(chromium, shot, tmp_path, {"timed_out": "#9467bd", "aborted": "#ff7f0e",
                                                      "killed": "#d62728", "missing": "#c8c8c8"})
    assert all(n > 200 for n in counts.values()), counts  # every state has its own colour, above the fold
