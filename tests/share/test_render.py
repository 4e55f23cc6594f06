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
    render_ms = float(attrs["data-render-ms"])
    assert render_ms < 2000
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
