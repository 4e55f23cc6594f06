"""The symptom that the kinds of artifacts suggest (``rules/artifacts/infer.yaml``): a weak prior.

A throughput table across GPU counts asks a scaling question, results across seeds a divergence
question, a launch script with nothing that ran a start-up question. The engine uses it only when the
user named no symptom, and lets a symptom from stronger evidence win.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from diagnose.evidence import InferredSymptom, Provenance
from diagnose.probes.artifacts import wording
from diagnose.probes.artifacts.spec import family

USES_SIGNATURES = frozenset({"report_worse_results_with_more_gpus", "report_slower_with_more_gpus"})

__all__ = ["infer_symptoms", "from_weak_evidence"]

RAN = ("step_metric", "stack_sample", "collective_state", "rank_exit", "checkpoint_content")


def _holds(when: dict[str, Any], ev: Sequence[Any]) -> list[Any] | None:
    """The evidence that makes ``when`` hold, or None."""
    if "step_world_sizes" in when:
        steps = [e for e in ev if e.kind == "step_metric" and e.world_size
                 and (e.step_time or e.throughput or e.epoch_time)]
        if len({e.world_size for e in steps}) >= when["step_world_sizes"]:
            return steps
    if "metric_seeds" in when:
        seeded = [e for e in ev if e.kind == "metric_series" and e.seed is not None]
        if len({e.seed for e in seeded}) >= when["metric_seeds"]:
            return seeded
    if "metric_world_sizes" in when:
        wanted = set(when.get("measures", ()))
        series = [e for e in ev if e.kind == "metric_series" and e.world_size
                  and (e.name in wanted or ("metric" in wanted and e.name not in
                                            ("throughput", "step_time", "epoch_time", "loss")))]
        if len({e.world_size for e in series}) >= when["metric_world_sizes"]:
            return series
    if "signatures" in when:  # what the user wrote they saw
        said = [e for e in ev if e.kind == "log_line" and e.signature in when["signatures"]]
        if said:
            return said
    if "system_facts" in when:
        facts = [e for e in ev if e.kind == "system_fact" and e.name in when["system_facts"]]
        if facts:
            return facts
    if "step_terms" in when:
        steps = [e for e in ev if e.kind == "step_metric" and any(getattr(e, t) for t in when["step_terms"])]
        if len(steps) >= 2 and _share(steps, when["step_terms"]) >= when.get("min_share", 0.0):
            return steps
    if "loss_runs" in when:  # the same training logged twice: a comparison of results
        losses = [e for e in ev if e.kind == "step_metric" and e.loss is not None and e.rank is None]
        if len({e.run or e.provenance.source for e in losses}) >= when["loss_runs"]:
            return losses
    if "init_only" in when:  # a log that stops while the process group forms: nothing after the init lines
        init = [e for e in ev if e.kind == "log_line" and e.signature in when["init_only"]]
        quiet = set(when["init_only"]) | set(when.get("benign", ()))
        if init and not any(e.kind in RAN or e.kind == "inferred_symptom"
                            or (e.kind == "log_line" and e.signature not in quiet) for e in ev):
            return init
    if "speed_only" in when:  # timings and nothing else (no loss, no error, no sentence): the report measures speed
        timed = [e for e in ev if e.kind == "step_metric" and (e.step_time or e.throughput or e.epoch_time)]
        at = {(e.provenance.source, e.provenance.line) for e in timed}
        if len(timed) >= when["speed_only"] and not any(
                (e.kind == "step_metric" and e.loss is not None) or e.kind in ("inferred_symptom", "metric_series")
                or (e.kind == "log_line" and (e.provenance.source, e.provenance.line) not in at) for e in ev):
            return timed
    if when.get("launch_only"):
        if any(e.kind == "inferred_symptom" for e in ev):
            return None  # the report's own sentences name what was seen: they say more than the launch alone
        if any(e.kind == "report_words" and e.sentences for e in ev) and wording.guess(ev):
            return None  # so do sentences no cue reads: the wording guess (the engine's last resort) speaks then
        # a script's own calls (launcher "code") say how it sets up ranks, not that a launch is all there is
        launches = [e for e in ev if e.kind == "launch_spec" and e.launcher != "code"]
        # lines matched inside the launch files themselves (--nproc-per-node, a python call) describe the launch,
        # they are not output of a run
        launch_files = {e.provenance.source for e in launches}
        if launches and not any(e.kind in RAN or (e.kind == "log_line" and e.provenance.source not in launch_files)
                                for e in ev):
            return launches
    return None


def _share(steps: Sequence[Any], terms: Sequence[str]) -> float:
    """Share of the step time that ``terms`` take over all steps whose time is known (spikes count in full);
    1.0 where no step time is known."""
    timed = [e for e in steps if e.step_time]
    total = sum(e.step_time for e in timed)
    return sum(getattr(e, t) or 0.0 for e in timed for t in terms) / total if total else 1.0


def infer_symptoms(evidence: Sequence[Any], words_not: Sequence[str] = ()) -> list[InferredSymptom]:
    """Symptoms the artifacts suggest, strongest first (at most one per rule), then the symptom the report's
    sentences describe (probes/artifacts/cues.py) unless it is one of ``words_not``."""
    out: list[InferredSymptom] = []
    holding: list[dict[str, Any]] = []  # the rules that hold, in table order
    for rule in family("infer").tables["rules"]:
        hits = _holds(rule["when"], evidence)
        if hits:
            first = hits[0]
            holding.append(rule)
            out.append(InferredSymptom(symptom=rule["symptom"], basis=rule["basis"], provenance=first.provenance,
                                       missing=tuple(rule.get("missing", ())),
                                       text=f"{rule['basis']} ({len(hits)} record(s))"))
    words = [_after_training(e, evidence) for e in evidence if e.kind == "inferred_symptom" and e.symptom not in words_not]
    # measurements that fit several symptoms (no report sentence decided first): the one the report's words name first
    if len(out) > 1 and "signatures" not in holding[0]["when"]:
        said = {e.symptom for e in words}
        out.sort(key=lambda found: found.symptom not in said)
    return out + words  # last: the symptom a report's own sentences describe, the weakest prior


def _after_training(said: Any, evidence: Sequence[Any]) -> Any:
    """A start-up hang the report's words name becomes a mid-run hang where the log shows training ran
    (``training_ran`` of infer.yaml: a line only a finished iteration prints, or steps logged)."""
    if said.symptom != "hang_at_startup":
        return said
    ran = family("infer").tables["training_ran"]
    proof = [e for e in evidence if e.kind == "log_line" and e.signature in ran["signatures"]]
    steps = [e for e in evidence if e.kind == "step_metric" and e.step is not None]
    if not proof and len({e.step for e in steps}) < ran["step_metrics"]:
        return said
    seen = proof[0].text if proof else f"{len({e.step for e in steps})} logged steps"
    return said.model_copy(update={"symptom": "hang_mid_run", "basis": f"{said.basis}, but the log shows training ran "
                                   f"({seen[:80]})", "text": f"{said.text}; training ran first"})


def from_weak_evidence(symptom: str, cause: str, source: str | None, line: int | None, text: str) -> InferredSymptom:
    """The symptom that the first cause's own weak evidence places (a traceback is a crash), taken as the report's
    symptom where nothing else names one: the runbook row's other causes and the rules that read the report's
    words for that symptom then apply, as when the user names it."""
    return InferredSymptom(
        symptom=symptom, basis=f"the evidence of {cause} ('{text[:80]}')",
        provenance=Provenance(probe="engine", source=source, line=line),
        missing=wording.missing_for(symptom), text=f"{symptom} from the evidence of {cause}")

