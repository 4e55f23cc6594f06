"""`diagnose preflight`: check this host (and every node of a Slurm allocation) before a launch.

Each check is a `HostCheck` (pass / fail / skip with its fix); failed checks become causes through
``rules/preflight/``. Inside a multi-node Slurm allocation the local checks run on every node through
``srun --overlap`` (``diagnose preflight --json --local``) and the versions are compared across nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diagnose.engine import diagnose_evidence
from diagnose.evidence import HostCheck, dump_evidence, parse_evidence
from diagnose.output.report import Report
from diagnose.probes.live.fanout import demux_labels
from diagnose.probes.preflight.probe import collect, config, make_check

_MARK = {"pass": "PASS", "fail": "FAIL", "skip": "skip"}


def run_preflight(port: int | None = None, nproc: int | None = None, workers: int | None = None,
                  local: bool = False, rule_dirs: Sequence[Path] = ()) -> Report:
    """Run every pre-launch check and diagnose the failures; the report lists every check in ``evidence``."""
    checks, settings = collect(port, nproc, workers)
    notes = [f"port {settings.port} from {settings.source('port')}; processes per node "
             f"{settings.nproc or 'unknown'} from {settings.source('nproc')}; dataloader workers "
             f"{'unknown (--workers)' if workers is None else workers}"]
    nodes = _allocation_nodes(settings.env)
    if not local and nodes > 1:
        remote, more = fanout(nodes, settings.env["SLURM_JOB_ID"], port, nproc, workers)
        notes += more
        if remote:
            checks = remote + [versions_agree(remote)]
        else:
            checks.append(_check("versions_agree", "skip", "the srun fan-out gave no node report"))
    elif not local:
        notes.append("versions compared across nodes only inside a multi-node Slurm allocation")
    report = diagnose_evidence(checks, command="preflight", notes=[*checklist_lines(checks), *notes],
                               rule_dirs=rule_dirs)
    report.evidence = dump_evidence(checks)
    return report


def _check(name: str, status: str, detail: str, **kw: Any) -> HostCheck:
    return make_check(name, status, detail, **kw)


def _allocation_nodes(env: Mapping[str, str]) -> int:
    """Nodes of the Slurm allocation this runs in (0 outside Slurm)."""
    if not env.get("SLURM_JOB_ID"):
        return 0
    for var in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        if env.get(var, "").isdigit():
            return int(env[var])
    return 1


def fanout_command(nodes: int, job_id: str, port: int | None, nproc: int | None, workers: int | None) -> list[str]:
    """The srun line that runs ``diagnose preflight --json --local`` once on every node of the allocation."""
    n = str(nodes)
    cmd = [shutil.which("srun") or "srun", f"--jobid={job_id}", "--overlap", f"-N{n}", f"-n{n}",
           "--ntasks-per-node=1", "--label", "--kill-on-bad-exit=0",
           sys.executable, "-m", "diagnose", "preflight", "--json", "--local"]
    for flag, value in (("--port", port), ("--nproc", nproc), ("--workers", workers)):
        if value is not None:
            cmd += [flag, str(value)]
    return cmd


def fanout(nodes: int, job_id: str, port: int | None, nproc: int | None, workers: int | None
           ) -> tuple[list[HostCheck], list[str]]:
    """Checks of every node (their provenance names the host) and notes on the fan-out."""
    cmd = fanout_command(nodes, job_id, port, nproc, workers)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=dict(os.environ),
                             timeout=config()["fanout"]["timeout_s"])
        stdout, stderr, rc = out.stdout, out.stderr, out.returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        stdout, stderr, rc = "", f"srun failed: {exc}", -1
    per_task = demux_labels(stdout)
    checks: list[HostCheck] = []
    failed: list[str] = []
    for task in range(nodes):
        try:
            report = json.loads("\n".join(per_task.get(task, [])))
            checks += [c for c in parse_evidence(report.get("evidence") or []) if c.kind == "host_check"]
        except ValueError:
            failed.append(f"task {task}")
    notes = [f"checked {nodes - len(failed)} of {nodes} node(s) of Slurm job {job_id} through srun --overlap"]
    if failed:
        last = next((e for e in reversed(stderr.splitlines()) if e.strip()), f"srun exit {rc}")
        notes.append(f"no report from {', '.join(failed)}: {last.strip()[:200]}")
    return checks, notes


def versions_agree(checks: list[HostCheck]) -> HostCheck:
    """One check over the nodes' ``versions`` records: every compared component has one version."""
    per_host: dict[str, dict[str, str]] = {}
    for c in checks:
        if c.name == "versions" and c.value:
            per_host[c.provenance.host or "?"] = dict(p.split("=", 1) for p in str(c.value).split() if "=" in p)
    if len(per_host) < 2:
        return _check("versions_agree", "skip", f"versions known for {len(per_host)} node(s) only")
    differ = []
    for key in config()["versions"]["compare"]:
        seen: dict[str, list[str]] = {}
        for host, found in sorted(per_host.items()):
            seen.setdefault(found.get(key, "absent"), []).append(host)
        if len(seen) > 1:
            differ.append(f"{key}: " + ", ".join(f"{v} on {','.join(h)}" for v, h in seen.items()))
    if differ:
        return _check("versions_agree", "fail", "; ".join(differ), value="; ".join(differ), source="srun fan-out")
    return _check("versions_agree", "pass", f"same versions on {len(per_host)} nodes", source="srun fan-out")


def checklist_lines(checks: list[HostCheck]) -> list[str]:
    """One summary line, then one line per check (with the fix of a failed one)."""
    counts = {s: sum(1 for c in checks if c.status == s) for s in ("pass", "fail", "skip")}
    hosts = {c.provenance.host for c in checks}
    verdict = "FAIL" if counts["fail"] else "PASS"
    lines = [f"preflight {verdict}: {counts['fail']} failed, {counts['pass']} passed, {counts['skip']} skipped"
             + (f" on {len(hosts)} nodes" if len(hosts) > 1 else "")]
    for c in checks:
        where = f"{c.provenance.host}: " if len(hosts) > 1 else ""
        lines.append(f"{_MARK[c.status]} {where}{c.name}: {c.detail}" + (f" -- fix: {c.fix}" if c.fix else ""))
    return lines


def render_checklist(report: Report) -> str:
    """The checklist of a preflight report as terminal text: verdict, then every check and its fix."""
    checks = [c for c in parse_evidence(report.evidence or []) if c.kind == "host_check"]
    lines = checklist_lines(checks)
    out = [lines[0], ""]
    for line in lines[1:]:
        text, _, fix = line.partition(" -- fix: ")
        out.append(f"  {text}")
        if fix:
            out.append(f"        fix: {fix}")
    return "\n".join(out)
