"""Slurm side of `diagnose hang`: what Slurm knows of a job, its output files, and the multi-node fan-out.

A job whose ranks run on other nodes is probed on every node through the job's own scheduler
(``srun --jobid ID --overlap -N<n> --ntasks-per-node=1 ... diagnose hang --local``); the per-node
evidence is merged here and the engine runs once on the whole.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.evidence import Provenance, RankStatus
from diagnose.output.report import Skipped
from diagnose.probes.live import bundle, merge
from diagnose.probes.logs.probe import scan_text
from diagnose.yamlload import pattern_table

_ACTIVE = ("RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING")


@dataclass
class SlurmJob:
    """What ``scontrol show job`` says about one job."""

    id: str
    state: str
    nodes: list[str] = field(default_factory=list)
    stdout: str | None = None
    stderr: str | None = None

    @property
    def running(self) -> bool:
        return self.state in _ACTIVE


_CONFIGS = ("/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf", "/etc/slurm-llnl/slurm.conf")


def _scontrol(*args: str, timeout: float = 5) -> str | None:
    """scontrol's stdout, or None where Slurm is not set up here (no config: skip its DNS SRV lookup)."""
    exe = shutil.which("scontrol")
    if exe is None or not (os.environ.get("SLURM_CONF") or any(Path(p).is_file() for p in _CONFIGS)):
        return None
    try:
        out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def slurm_job(job: str) -> SlurmJob | None:
    """The Slurm job a ``--job`` value names (``slurm:ID`` or a bare number), when Slurm knows it."""
    kind, _, ident = job.partition(":") if ":" in job else ("", "", job)
    ident = ident.strip()
    if kind not in ("", "slurm") or not ident.isdigit():
        return None
    text = _scontrol("show", "job", "-o", ident)
    if not text:
        return None

    fields = scontrol_fields(text.splitlines()[0])

    def value(key: str) -> str | None:
        found = fields.get(key)
        return found if found not in (None, "", "(null)", "None") else None

    nodes = value("NodeList")
    return SlurmJob(id=ident, state=value("JobState") or "UNKNOWN", nodes=expand_hostlist(nodes) if nodes else [],
                    stdout=value("StdOut"), stderr=value("StdErr"))


def scontrol_fields(line: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol show -o`` line (a value runs to the next `` Key=``; first wins)."""
    fields: dict[str, str] = {}
    for m in pattern_table("live_patterns")["scontrol_field"].finditer(line):
        fields.setdefault(m.group(1), m.group(2))
    return fields


def expand_hostlist(spec: str) -> list[str]:
    """``node[01-02],gpu7`` -> names, through ``scontrol show hostnames`` (the spec itself if that fails)."""
    out = _scontrol("show", "hostnames", spec)
    names = out.split() if out else []
    return names or [spec]


def local_names() -> set[str]:
    """Names under which Slurm may know this host."""
    host = socket.gethostname()
    return {host, host.split(".")[0], socket.getfqdn(), "localhost"}


def needs_fanout(job: SlurmJob) -> bool:
    """The job runs on a node other than this one (or on several)."""
    return job.running and (len(job.nodes) > 1 or any(n not in local_names() for n in job.nodes))


_TAIL = 8 << 20  # the end of a job's output is where its failure is


def output_evidence(job: SlurmJob) -> tuple[list[Any], list[Skipped], list[str]]:
    """Scan the end of the job's own output files (Slurm's StdOut/StdErr) with the log signatures.

    srun's ``N: `` labels become ``[rankN]: `` so that signatures and rank attribution see them.
    """
    evidence: list[Any] = []
    skipped: list[Skipped] = []
    notes: list[str] = []
    for name in dict.fromkeys(p for p in (job.stdout, job.stderr) if p):
        path = Path(name)
        try:
            if not path.is_file():
                notes.append(f"job output {name}: not a readable file on this host")
                continue
            size = path.stat().st_size
            with open(path, "rb") as fh:
                if size > _TAIL:
                    fh.seek(size - _TAIL)
                    fh.readline()
                data = fh.read(_TAIL)
        except OSError as exc:
            skipped.append(Skipped(source=name, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        labelled = pattern_table("live_patterns")["srun_label"].sub(rb"[rank\1]: ", data)
        hits = scan_text(labelled.decode("utf-8", "replace"), source=name)
        evidence += hits
        part = f"last {_TAIL >> 20} MiB of " if size > _TAIL else ""
        notes.append(f"read the job's output file ({part}{name}): {len(hits)} matching line(s)")
    return evidence, skipped, notes


def fanout_command(job: SlurmJob, timeout: float, native: bool = False) -> list[str]:
    """The srun line that runs the local probe once on every node of the job."""
    n = str(len(job.nodes))
    cmd = [shutil.which("srun") or "srun", f"--jobid={job.id}", "--overlap", f"-N{n}", f"-n{n}",
           "--ntasks-per-node=1", f"--nodelist={','.join(job.nodes)}", "--label", "--kill-on-bad-exit=0",
           sys.executable, "-m", "diagnose", "hang", "--job", f"slurm:{job.id}", "--json", "--local",
           "--timeout", str(timeout)]
    return cmd + (["--native"] if native else [])


def collect_nodes(job: SlurmJob, timeout: float, native: bool = False
                  ) -> tuple[list[Any], list[Skipped], list[str], dict[str, Any]]:
    """Probe every node of the job through srun and merge: (evidence, skipped, notes, raw)."""
    cmd = fanout_command(job, timeout, native)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, check=False)
        stdout, stderr, rc = out.stdout, out.stderr, out.returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        stdout, stderr, rc = "", f"srun failed: {exc}", -1
    per_out, per_err = demux_labels(stdout), demux_labels(stderr)
    reports: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for task, node in enumerate(job.nodes):
        try:
            reports[node] = bundle.from_json("\n".join(per_out.get(task, [])))
        except ValueError:
            errs = [e for e in per_err.get(task, []) if e.strip()] or [e for e in stderr.splitlines() if e.strip()]
            failed[node] = errs[-1].strip() if errs else f"no output (srun exit {rc})"
    evidence, skipped, notes = merge_reports(reports, failed)
    notes.insert(0, f"job {job.id} read as a Slurm job id; probed {len(job.nodes)} node(s) "
                    f"({', '.join(job.nodes)}) through srun --overlap, {len(failed)} failed")
    raw = {"job": {"kind": "slurm", "id": job.id, "nodes": job.nodes, "command": cmd, "failed": failed,
                   "node_notes": {n: r.get("notes", []) for n, r in reports.items()}}, "dumps": []}
    return evidence, skipped, notes, raw


def demux_labels(text: str) -> dict[int, list[str]]:
    """Lines of ``srun --label`` output, by task id."""
    out: dict[int, list[str]] = {}
    label = pattern_table("live_patterns")["srun_label_line"]
    for line in text.splitlines():
        m = label.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(m.group(2))
    return out


def merge_reports(reports: dict[str, dict[str, Any]], failed: dict[str, str]
                  ) -> tuple[list[Any], list[Skipped], list[str]]:
    """One evidence list from per-node ``--local`` bundles; failed nodes leave no_evidence ranks and a note."""
    merged = merge.merge({node: {**rep, "notes": [n for n in rep.get("notes", []) if not n.startswith("probed in")]}
                          for node, rep in reports.items()})
    evidence, notes = merged.evidence, merged.notes
    unseen = merged.unseen()
    for node, reason in failed.items():
        notes.append(f"probe on node {node} failed: {reason}")
    if not failed:  # every node answered: a rank none of them runs is missing, not elsewhere
        evidence = [e.model_copy(update={"status": "missing", "detail": "not found on any node of the job"})
                    if e.kind == "rank_status" and e.status == "no_evidence" and e.rank in unseen else e
                    for e in evidence]
    else:
        where = ", ".join(failed)
        evidence = [e for e in evidence if not (e.kind == "rank_status" and e.rank in unseen)]
        evidence += [RankStatus(rank=r, status="no_evidence", detail=f"probe failed on {where}",
                                text=f"rank {r}: no evidence, the probe failed on node(s) {where}",
                                provenance=Provenance(probe="slurm fan-out", source="srun --overlap", host=where))
                     for r in unseen]
    return evidence, merged.skipped, notes
