"""The public run record of the runbook (R.record.fields), as Markdown, redacted by default.

Fields: world size and local batch, accumulation, effective batch, precision and
checkpointing, launcher and parallelism type, checkpoint contents, hardware
class, failure class, plus the diagnosis. Facts come from the evidence; a field
the evidence does not give is written as unknown, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from diagnose.commands.logs import collect_logs
from diagnose.engine import diagnose_evidence
from diagnose.output.grid import rank_ranges
from diagnose.output.redact import Redactor, redact_report, redact_text
from diagnose.output.report import Report

_FIELD_KEYS = {
    "local_batch": ("local_batch", "batch_size", "per_device_train_batch_size", "micro_batch_size"),
    "accumulation": ("accumulation", "gradient_accumulation_steps", "grad_accum", "accumulate_grad_batches"),
    "precision": ("precision", "mixed_precision", "dtype", "amp_dtype"),
    "activation_checkpointing": ("activation_checkpointing", "gradient_checkpointing"),
    "hardware": ("gpu_name", "device_name", "gpu", "hardware"),
    "parallelism": ("parallelism", "strategy", "distributed_type"),
    "world_size": ("world_size",),
}
_LAUNCHERS = (  # (environment variable, launcher) in order of precedence
    ("TORCHELASTIC_RUN_ID", "torchrun"), ("ACCELERATE_MIXED_PRECISION", "accelerate"),
    ("OMPI_COMM_WORLD_SIZE", "mpirun"), ("PMI_RANK", "mpirun"), ("SLURM_PROCID", "srun"),
)
_PARALLELISM_ENV = (("ACCELERATE_USE_FSDP", "FSDP"), ("ACCELERATE_USE_DEEPSPEED", "DeepSpeed"))


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _as_int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def facts_from_evidence(evidence: Iterable[Any]) -> dict[str, Any]:
    """Record facts from RankEnv, StepMetric, CheckpointContent and LogLine evidence."""
    facts: dict[str, Any] = {}
    for item in evidence:
        kind = _get(item, "kind")
        if kind == "rank_env":
            _env_facts(_get(item, "variables") or {}, facts)
        elif kind == "step_metric":
            for key in ("world_size", "local_batch", "accumulation"):
                if _get(item, key) is not None:
                    facts.setdefault(key, _get(item, key))
        elif kind == "checkpoint_content":
            facts.setdefault("checkpoint", {
                "format": _get(item, "format"), "present": list(_get(item, "present") or ()),
                "missing": list(_get(item, "missing") or ()), "world_size": _get(item, "world_size")})
        elif kind == "log_line":
            fields = _get(item, "fields") or {}
            for fact, keys in _FIELD_KEYS.items():
                for key in keys:
                    if key in fields:
                        facts.setdefault(fact, fields[key])
    if all(isinstance(facts.get(k), int) for k in ("world_size", "local_batch")):
        facts.setdefault("effective_batch", facts["world_size"] * facts["local_batch"]
                         * (_as_int(facts.get("accumulation")) or 1))
    return facts


def _env_facts(env: dict[str, str], facts: dict[str, Any]) -> None:
    for name, fact in (("WORLD_SIZE", "world_size"), ("LOCAL_WORLD_SIZE", "procs_per_node"),
                       ("SLURM_NNODES", "nodes"), ("SLURM_JOB_NUM_NODES", "nodes"),
                       ("GROUP_WORLD_SIZE", "nodes")):
        if _as_int(env.get(name)) is not None:
            facts.setdefault(fact, _as_int(env[name]))
    for name, launcher in _LAUNCHERS:
        if name in env:
            facts.setdefault("launcher", launcher)
            break
    for name, kind in _PARALLELISM_ENV:
        if str(env.get(name, "")).lower() in ("1", "true", "yes"):
            facts.setdefault("parallelism", kind)
    if env.get("ACCELERATE_MIXED_PRECISION"):
        facts.setdefault("precision", env["ACCELERATE_MIXED_PRECISION"])


def _unknown(value: Any) -> str:
    return "unknown (not in the evidence)" if value in (None, "", []) else str(value)


def _rows(report: Report, facts: dict[str, Any]) -> list[tuple[str, str, str]]:
    world = facts.get("world_size") or report.ranks.world_size
    shape = ""
    if facts.get("nodes") and facts.get("procs_per_node"):
        shape = f" ({facts['nodes']} nodes × {facts['procs_per_node']})"
    batch = facts.get("local_batch")
    accum = facts.get("accumulation")
    eff = facts.get("effective_batch")
    if eff is None and isinstance(world, int) and isinstance(batch, int):
        eff = world * batch * (_as_int(accum) or 1)
    ckpt = facts.get("checkpoint") or {}
    ckpt_text = (f"{ckpt.get('format')}: holds {', '.join(ckpt.get('present') or []) or 'nothing known'}"
                 f"; lacks {', '.join(ckpt.get('missing') or []) or 'nothing'}") if ckpt else None
    act = facts.get("activation_checkpointing")
    precision = _unknown(facts.get("precision"))
    if act is not None:
        precision += f"; activation checkpointing {'on' if str(act).lower() in ('1', 'true', 'on', 'yes') else 'off'}"
    top = report.causes[0] if report.causes else None
    failure = " → ".join(x for x in (report.symptom, top.id if top else None) if x)
    hardware = facts.get("hardware")
    if hardware and facts.get("procs_per_node"):
        hardware = f"{facts['procs_per_node']} × {hardware} per node"
    return [
        ("world size and local batch", f"N = {_unknown(world)}{shape}, B_local = {_unknown(batch)}",
         "reconstructs effective batch"),
        ("accumulation steps", f"A = {_unknown(accum)}", "separates micro-step from optimizer step"),
        ("effective batch", f"B_eff = N · B_local · A = {_unknown(eff)}", "optimizer step, LR schedule, warmup"),
        ("precision and checkpointing", precision, "explains memory and stability"),
        ("launcher and parallelism type",
         f"{_unknown(facts.get('launcher'))}; {_unknown(facts.get('parallelism'))}",
         "distinguishes DDP, sharding, pipeline, model parallel"),
        ("checkpoint contents", _unknown(ckpt_text), "proves resume boundary"),
        ("hardware class", _unknown(hardware), "context without private node names"),
        ("failure class", _unknown(failure), "useful for future runs without exposing logs"),
    ]


def _diagnosis(report: Report, limit: int = 3) -> list[str]:
    if not report.causes:
        return ["No rule matched: the evidence did not support any known cause."]
    lines = []
    for n, c in enumerate(report.causes[:limit], 1):
        who = f"; culprit ranks {rank_ranges(c.ranks)}" if c.ranks else ""
        lines.append(f"{n}. **{c.id}** (score {c.score:.2f}, {c.confidence}{who}): {c.summary}")
        for e in c.evidence[:3]:
            where = ":".join(str(x) for x in (e.source, e.line) if x is not None)
            lines.append(f"   - `{where}` {e.text.strip()[:200]}" if where else f"   - {e.text.strip()[:200]}")
        lines.append(f"   - first fix: {c.fix}")
    return lines


def run_record(paths: Sequence[Path], redactor: Any = None) -> str:
    """The record of the run whose files are under ``paths``; redacted with ``redactor`` unless it is None."""
    evidence, skipped, notes = collect_logs(paths)
    report = diagnose_evidence(evidence, skipped=skipped, notes=notes, command="record")
    return render_record(report, facts_from_evidence(evidence), redact=redactor is not None, redactor=redactor)


def render_record(report: Report, facts: dict[str, Any], redact: bool = True, redactor: Any = None) -> str:
    """The public run record as Markdown (identifiers replaced unless `redact` is False)."""
    lines = ["# Run record", "", "| field | value | why |", "| --- | --- | --- |"]
    lines += [f"| {f} | {v.replace('|', '/')} | {w} |" for f, v, w in _rows(report, facts)]
    lines += ["", "## Diagnosis", "", *_diagnosis(report)]
    if report.next:
        lines += ["", "## To collect next time", "", *[f"- {x}" for x in report.next]]
    if redact:
        lines += ["", "_Identifiers (hosts, IPs, ports, users, paths, partitions, accounts, job ids, pids)"
                      " are replaced by placeholders._"]
    text = "\n".join(lines) + "\n"
    if not redact:
        return text

    redactor = redactor or Redactor()
    redact_report(report.to_json_dict(), redactor)
    return redact_text(text, redactor)
