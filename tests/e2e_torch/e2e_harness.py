"""Run a real torchrun (or hand-launched env://) job of a scenario script and keep every log it leaves.

Layout of one run folder (what `diagnose logs FOLDER` is pointed at):
  console.log                      torchrun's combined stdout+stderr, as a user pastes it
  torchrun-logs/<run>/attempt_0/<local_rank>/{stdout,stderr}.log, error.json   (variant "logdir")
  tmp/torchelastic_*/.../error.json                                             (@record, no --log-dir)
  rank-<r>.log                     per-process output of a hand launch (kind "manual")
Nothing outside the run folder is written. Every process started is killed by pid at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SCENARIOS = Path(__file__).parent / "scenarios"
WALL_LIMIT_S = 150.0  # lab-notes section 8 suggests 40 s; concurrent runs on a loaded 2-core box took 60+ (a bound, not a benchmark)
DIAGNOSE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Expect:
    """What `diagnose logs` must say: top cause in `top1`, `in_top3` causes among the first three,
    the top cause's culprit ranks (None: not asserted), ranks that must not be named as culprits."""

    top1: tuple[str, ...]
    in_top3: tuple[str, ...] = ()
    ranks: tuple[int, ...] | None = None
    not_ranks: tuple[int, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    script: str
    expect: Expect
    evidence: tuple[str, ...]  # regexes that must appear in the saved logs (lab-notes texts)
    env: dict[str, str] = field(default_factory=dict)
    pg_timeout: float = 20.0
    kind: str = "torchrun"  # torchrun | manual | port_in_use
    nproc: int = 2
    world_size: int = 2  # manual launch only
    variants: tuple[str, ...] = ("logdir", "console")


@dataclass
class RunResult:
    scenario: str
    variant: str
    folder: Path
    returncode: int | None
    wall_s: float
    timed_out: bool
    leftover_pids: list[int]

    def all_text(self) -> str:
        parts = []
        for p in sorted(self.folder.rglob("*")):
            if p.is_file() and p.suffix in (".log", ".json", ".txt"):
                parts.append(p.read_text(errors="replace"))
        return "\n".join(parts)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _base_env(sc: Scenario, folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        env.pop(key, None)
    tmp = folder / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        TMPDIR=str(tmp),
        E2E_PG_TIMEOUT=str(sc.pg_timeout),
        E2E_WORKDIR=str(tmp),
        PYTHONPATH=str(SCENARIOS),
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        GLOO_SOCKET_IFNAME="lo",
    )
    env.update(sc.env)
    return env


def _torchrun_cmd(sc: Scenario, folder: Path, variant: str, port: int | None) -> list[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(sc.nproc)]
    if port is not None:
        cmd += ["--nnodes", "1", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    if variant == "logdir":
        cmd += ["--log-dir", str(folder / "torchrun-logs"), "--redirects", "3", "--tee", "3"]
    return [*cmd, str(SCENARIOS / sc.script)]


class _Tracker:
    """Remembers every descendant of the launched processes, so orphans can be killed by pid."""

    def __init__(self, procs: list[subprocess.Popen]) -> None:
        self.procs = procs
        self.seen: dict[int, float] = {}

    def poll(self) -> None:
        for p in self.procs:
            try:
                parent = psutil.Process(p.pid)
                for child in [parent, *parent.children(recursive=True)]:
                    self.seen.setdefault(child.pid, child.create_time())
            except psutil.Error:
                continue

    def alive(self) -> list[psutil.Process]:
        out = []
        for pid, created in self.seen.items():
            try:
                proc = psutil.Process(pid)
                if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                    out.append(proc)
            except psutil.Error:
                continue
        return out

    def kill_all(self) -> list[int]:
        """SIGTERM, then SIGKILL, every tracked process still alive; returns the pids found alive."""
        alive = self.alive()
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGTERM)
        _, still = psutil.wait_procs(alive, timeout=3)
        for proc in still:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(still, timeout=3)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=3)
        return [p.pid for p in alive]


def run_scenario(sc: Scenario, variant: str, folder: Path, wall_limit: float = WALL_LIMIT_S) -> RunResult:
    """Launch one scenario, wait for it (at most wall_limit), and leave its logs in folder."""
    folder.mkdir(parents=True, exist_ok=True)
    env = _base_env(sc, folder)
    holder: socket.socket | None = None
    procs: list[subprocess.Popen] = []
    files = []
    start = time.monotonic()
    try:
        if sc.kind == "manual":
            port = free_port()
            for rank in range(sc.nproc):
                renv = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(sc.world_size),
                            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
                out = open(folder / f"rank-{rank}.log", "wb")  # noqa: SIM115 - closed in finally
                files.append(out)
                procs.append(subprocess.Popen([sys.executable, "-u", str(SCENARIOS / sc.script)], env=renv,
                                              stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                              cwd=folder))
        else:
            port = None
            if sc.kind == "port_in_use":
                holder = socket.socket()
                holder.bind(("127.0.0.1", 0))
                holder.listen(1)
                port = holder.getsockname()[1]
            out = open(folder / "console.log", "wb")  # noqa: SIM115 - closed in finally
            files.append(out)
            procs.append(subprocess.Popen(_torchrun_cmd(sc, folder, variant, port), env=env, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True, cwd=folder))
        tracker = _Tracker(procs)
        timed_out = False
        while any(p.poll() is None for p in procs):
            tracker.poll()
            if time.monotonic() - start > wall_limit:
                timed_out = True
                break
            time.sleep(0.1)
        wall = time.monotonic() - start
        leftovers = tracker.kill_all()
        rc = procs[0].returncode if procs else None
    finally:
        for f in files:
            f.close()
        if holder is not None:
            holder.close()
    result = RunResult(sc.name, variant, folder, rc, wall, timed_out, leftovers)
    (folder.parent / f"{folder.name}.run.json").write_text(json.dumps(
        {"scenario": sc.name, "variant": variant, "returncode": rc, "wall_s": round(wall, 2),
         "timed_out": timed_out, "leftover_pids": leftovers}))
    return result


def diagnose_json(*paths: Path, extra: tuple[str, ...] = ()) -> dict:
    """Run `python -m diagnose logs PATH... --json` and return the parsed report."""
    cmd = [sys.executable, "-m", "diagnose", "logs", *map(str, paths), "--json", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=DIAGNOSE_TIMEOUT_S)
    assert proc.returncode == 0, f"diagnose exited {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def summarize(report: dict, n: int = 3) -> str:
    rows = [f"{c['id']}({c.get('score', 0):.2f}) ranks={c.get('ranks')}" for c in report.get("causes", [])[:n]]
    return "; ".join(rows) or "no causes"


def check_expect(report: dict, exp: Expect) -> None:
    causes = report.get("causes", [])
    ids = [c["id"] for c in causes]
    refined = [c.get("refines") for c in causes]
    assert causes, f"no cause reported; expected {exp.top1}"
    top = causes[0]
    top_ids = {top["id"], refined[0]}
    assert top_ids & set(exp.top1), f"top cause {top['id']} not in {exp.top1}: {summarize(report)}"
    first3 = set(ids[:3]) | {r for r in refined[:3] if r}
    for cid in exp.in_top3:
        assert cid in first3, f"{cid} not in the top 3: {summarize(report)}"
    culprits = tuple(sorted(top.get("ranks") or []))
    if exp.ranks is not None:
        assert culprits == tuple(sorted(exp.ranks)), f"culprit ranks {culprits} != {exp.ranks}: {summarize(report)}"
    for r in exp.not_ranks:
        assert r not in culprits, f"victim rank {r} named as culprit: {summarize(report)}"
    assert top.get("evidence"), "top cause cites no evidence"
