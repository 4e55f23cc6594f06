"""`diagnose hang --job ID`: probe a hung job's ranks on this host and diagnose them.

Discovery -> process state, environment and stacks of every rank (in parallel, time-bounded)
-> cross-rank facts -> the rule engine. Nothing here stops, signals or slows the job.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.analyzers.stacks import WAITING, alive, progress_lines, rank_views
from diagnose.engine import diagnose_evidence
from diagnose.errors import ConfigError, ProbeError
from diagnose.evidence import dump_evidence
from diagnose.output.report import Report, Skipped
from diagnose.probes.live import bundle, discovery, procstate, stacks
from diagnose.probes.live import fanout as live_nodes


def collect(job: str, timeout: float = 10.0, *, native: bool = False
            ) -> tuple[list[Any], list[Skipped], list[str], dict[str, Any]]:
    """Collect the live evidence of a job: (evidence, skipped, notes, raw material for --save).

    ``native`` adds native frames (py-spy --native, 1-2 s per rank) to the second sample of ranks
    seen in backward, to show DDP's reducer waiting in its all_reduce.
    """
    start = time.monotonic()
    found = discovery.discover(job)
    host = socket.gethostname()
    procs = procstate.prime(found.ranks)
    targets = [stacks.Target(pid=i.pid, rank=i.rank, host=host) for i in found.ranks]
    per_dump = max(1.0, min(3.0, timeout / 4))
    sampled = stacks.sample_stacks(targets, timeout=per_dump, native_for=("backward",) if native else ())
    moved = discovery.relabel_from_locals(found, stacks.main_frames(sampled.dumps),
                                          stacks.frame_signatures()["library_re"])
    if moved:
        stacks.relabel(sampled, {i.pid: i.rank for i in found.ranks})
    if _nothing_decided(sampled.evidence):  # slow or stuck is not decided yet: look once more, later
        targets = [stacks.Target(pid=i.pid, rank=i.rank, host=host) for i in found.ranks]
        stacks.sample_stacks(targets, samples=1, interval=LATER_S, timeout=per_dump, first=2, out=sampled,
                             native_for=())
    evidence: list[Any] = [procstate.rank_env(info, host) for info in found.ranks]
    evidence.extend(sampled.evidence)
    evidence.extend(procstate.rank_states(found, procs, host))
    notes = [f"job {found.id} read as a {_KIND_WORDS[found.kind]}",
             _found_line(found), discovery.identified_line(found), *_progress_notes(evidence), *found.notes,
             *sampled.notes, *_backward_note(evidence, native), f"probed in {time.monotonic() - start:.2f} s"]
    raw = {"job": _job_summary(found), "dumps": sampled.dumps}
    return evidence, sampled.skipped, notes, raw


LATER_S = 1.0  # the third sample of a job whose ranks all work: a slow step shows progress by then


def _nothing_decided(samples: list[Any]) -> bool:
    """Two quick samples cannot tell slow from stuck: no rank waits in a collective and none has moved, or
    some ranks moved and others not yet (steps longer than the gap between samples). A hang where no rank
    moves is decided at once and pays no later sample."""
    views = rank_views(samples)
    if not views:
        return False
    moved = [v.moving for v in views.values()]
    if any(moved):
        return not all(moved)
    return not any(v.activity in WAITING for v in views.values())


def _progress_notes(evidence: list[Any]) -> list[str]:
    """'the job is progressing' with what moved, when every sampled rank moved; else the ranks that did."""
    lines = progress_lines(evidence)
    if not lines:
        return []
    sampled = [v for v in rank_views(evidence).values() if v.sample is not None and alive(v)]
    shown = "; ".join(lines[:6]) + (f"; ... ({len(lines) - 6} more)" if len(lines) > 6 else "")
    if len(lines) == len(sampled):
        return [f"the job is progressing: every rank moved between samples ({shown}); no rank is stuck"]
    return [f"{len(lines)} of {len(sampled)} rank(s) moved between samples, slow rather than stuck ({shown})"]


def _backward_note(evidence: list[Any], native: bool) -> list[str]:
    stuck = [r for r, v in rank_views(evidence).items() if v.activity == "backward" and not v.moving]
    if not stuck or native:
        return []
    return [f"rank(s) {', '.join(map(str, stuck))} stuck in backward: under DDP that is the gradient "
            "all_reduce (native frames show c10d::Reducer; probe with native=True to confirm)"]


_KIND_WORDS = {"slurm": "Slurm job id", "torchrun": "torchrun run id (TORCHELASTIC_RUN_ID)",
               "pid": "launcher pid"}


def _found_line(found: Any) -> str:
    shown = found.ranks[:MAX_LISTED]
    ranks = ", ".join(f"rank {i.rank} pid {i.pid}" for i in shown) + (
        f", ... ({len(found.ranks) - len(shown)} more)" if len(found.ranks) > len(shown) else "")
    extra = f"; {len(found.launchers)} launcher/agent and {len(found.workers)} helper processes"
    ws = f" of WORLD_SIZE {found.world_size}" if found.world_size else ""
    return f"found {len(found.ranks)} rank processes{ws} ({ranks}){extra}"


MAX_LISTED = 16


def _job_summary(found: Any) -> dict[str, Any]:
    def row(i: Any) -> dict[str, Any]:
        return {"pid": i.pid, "ppid": i.ppid, "role": i.role, "rank": i.rank, "local_rank": i.local_rank,
                "world_size": i.world_size, "rank_var": i.rank_var, "launcher": i.launcher,
                "parent_pid": i.parent_pid, "cmdline": i.cmdline}

    return {"kind": found.kind, "id": found.id, "world_size": found.world_size, "missing": found.missing,
            "elsewhere": found.elsewhere, "processes": [row(i) for i in
                                                        found.ranks + found.launchers + found.workers]}


def save_evidence(directory: Path, evidence: list[Any], skipped: list[Skipped], notes: list[str],
         raw: dict[str, Any]) -> None:
    """Write the evidence (``evidence.jsonl``), raw py-spy output and the process table to a folder."""
    bundle.write(directory, dump_evidence(evidence), [s.model_dump() for s in skipped], notes)
    spy = directory / "pyspy"
    spy.mkdir(exist_ok=True)
    for d in raw["dumps"]:
        name = f"rank{d.target.rank}.pid{d.target.pid}.sample{d.sample}{'.native' if d.native else ''}"
        (spy / f"{name}.json").write_text(d.raw or "")
        if d.error:
            (spy / f"{name}.error.txt").write_text(d.error + "\n")
    (directory / "processes.json").write_text(json.dumps(raw["job"], indent=1, sort_keys=True))


def check_save(directory: Path) -> None:
    """Refuse a --save target before anything is probed: a file, a folder holding other files, or unwritable."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"--save {directory}: a file of that name exists; give a new or empty folder")
    if directory.is_dir() and any(directory.iterdir()):
        raise ConfigError(f"--save {directory}: the folder is not empty (files of an earlier probe would mix "
                          "with this one); give a new or empty folder")
    parent = next((p for p in [directory, *directory.parents] if p.exists()), Path("."))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--save {directory}: {parent} is not writable")


def run_hang(job: str, timeout: float = 10.0, save: Path | None = None, *, native: bool = False,
             local: bool = False, fanout: bool | None = None, rule_dirs: Sequence[Path] = ()) -> Report | str:
    """Probe a hung job and return the diagnosis (raises ProbeError for an unknown job).

    A Slurm job whose ranks run on other nodes is probed on each node through ``srun --overlap``
    (``fanout=None``: decide from Slurm's node list; True/False force it). ``local`` probes only this
    node and returns its evidence bundle (JSON text) for that fan-out to merge: the engine runs once,
    in the parent, with the site rules of ``rule_dirs``.
    """
    if save is not None:
        check_save(Path(save))
    sjob = None if local else live_nodes.slurm_job(job)
    if sjob is not None and sjob.running and (live_nodes.needs_fanout(sjob) if fanout is None else fanout):
        evidence, skipped, notes, raw = live_nodes.collect_nodes(sjob, timeout, native)
    else:
        try:
            evidence, skipped, notes, raw = collect(job, timeout, native=native)
        except ProbeError as exc:
            if sjob is not None and not sjob.running:
                raise ProbeError(f"{exc}; Slurm says job {sjob.id} is {sjob.state}") from None
            raise
    if sjob is not None:
        more, more_skipped, more_notes = live_nodes.output_evidence(sjob)
        evidence += more
        skipped += more_skipped
        notes += more_notes
    if save is not None:
        notes.append(f"evidence saved to {save}")
        save_evidence(Path(save), evidence, skipped, notes, raw)
    if local:
        return bundle.to_json(dump_evidence(evidence), [s.model_dump() for s in skipped], notes)
    return diagnose_evidence(evidence, command="hang", skipped=skipped, notes=notes, rule_dirs=rule_dirs)
