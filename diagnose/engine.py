"""Evaluate the rule set over evidence and build the ranked report."""

from __future__ import annotations

import string
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from diagnose.analyzers import crossrank, rankview
from diagnose.analyzers.scaling import analyze_scaling
from diagnose.context import Context
from diagnose.evidence import ReportedSymptom
from diagnose.output.report import Cause, EvidenceRef, Report, Skipped
from diagnose.predicates import REGISTRY, Binding
from diagnose.predicates.launch_requests import starts_processes
from diagnose.predicates.logs import raised_in
from diagnose.predicates.tables import table_list
from diagnose.probes.artifacts import wording
from diagnose.probes.artifacts.infer import from_weak_evidence, infer_symptoms
from diagnose.ruleset import RuleSet, load_ruleset
from diagnose.rulespec import Outcome, PredicateCall, Rule
from diagnose.scoring import alternative_score, apply_prior, cap_prior, combine, confidence_of, finding_score
from diagnose.vocab import resolve_symptom

MAX_EVIDENCE_PER_CAUSE = 8


@dataclass(frozen=True)
class Finding:
    """One rule outcome that fired, with what it bound."""

    rule: Rule
    outcome: Outcome
    bindings: dict[str, Binding]
    message: str
    said: str | None = None  # the rule's symptom that the report's own words name, where the rule lists several

    @property
    def cause(self) -> str:
        return self.outcome.cause

    @property
    def culprits(self) -> frozenset[int]:
        b = self.bindings.get(self.outcome.culprits or "")
        return b.ranks if b else frozenset()

    @property
    def symptom(self) -> str:
        return self.outcome.symptom or self.said or self.rule.symptoms[0]


def _check(call: PredicateCall, ctx: Context, bindings: dict[str, Binding]) -> bool:
    result = REGISTRY[call.predicate].func(ctx, **call.params)
    if call.negate:
        return result is None
    if result is None:
        return False
    bindings[call.bind or f"_{call.predicate}"] = result
    return True


def evaluate_rule(rule: Rule, ctx: Context) -> Finding | None:
    """The first outcome of ``rule`` whose conditions hold, or None."""
    if rule.status == "deprecated":
        return None
    bindings: dict[str, Binding] = {}
    if not all(_check(call, ctx, bindings) for call in rule.match):
        return None
    for outcome in rule.outcomes:
        local = dict(bindings)
        if all(_check(call, ctx, local) for call in outcome.when):
            return Finding(rule, outcome, local, render_message(outcome.message, local), _said(rule, ctx))
    return None


def _said(rule: Rule, ctx: Context) -> str | None:
    """Of a rule's several symptoms, the one the report is about: the symptom told (or chosen from the artifacts),
    else the one the report's own words describe (its sentences, read by the cue reader): a launch mistake that may
    show as a hang or as slow scaling is the hang when the user says it hung."""
    if len(rule.symptoms) < 2:
        return None
    return next((e.symptom for kind in ("reported_symptom", "inferred_symptom") for e in ctx.of(kind)
                 if e.symptom in rule.symptoms), None)


class _Fields(string.Formatter):
    def __init__(self, bindings: dict[str, Binding]) -> None:
        self.bindings = bindings

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        name, _, attr = field_name.partition(".")
        b = self.bindings.get(name)
        return (b.value(attr or "ranks") if b else "?"), field_name


def render_message(template: str, bindings: dict[str, Binding]) -> str:
    """Fill ``{binding.field}`` placeholders."""
    return _Fields(bindings).format(template)


def evaluate(ruleset: RuleSet, ctx: Context) -> list[Finding]:
    """Every rule that fires; each rule walks indexes, so cost is linear in evidence, not ranks x rules."""
    findings = []
    for rule in ruleset.rules:
        if rule.requires and not set(rule.requires) & ctx.kinds():
            continue
        finding = evaluate_rule(rule, ctx)
        if finding is not None:
            findings.append(finding)
    return findings


def _with_alternatives(findings: Sequence[Finding]) -> list[tuple[Finding, float, int]]:
    """Each finding with its score, plus one weaker finding per alternative cause its outcome names.

    The third item is the cause's place in its outcome: 0 for the conclusion, then 1, 2, ... in the
    order the rule lists its alternatives (the author's judgement of which is likelier)."""
    out = []
    for f in findings:
        out.append((f, finding_score(f.outcome.confidence, f.rule.status == "experimental"), 0))
        for place, alt in enumerate(f.outcome.alternatives, start=1):
            outcome = f.outcome.model_copy(update={"cause": alt, "refines": None, "alternatives": (), "culprits": None,
                                                   "confidence": "low"})
            message = f"{f.message} (the same evidence also fits {alt})"
            out.append((Finding(f.rule, outcome, f.bindings, message, f.said), alternative_score(f.outcome.confidence),
                        place))
    return out


def _lines_of(f: Finding) -> set[tuple[str | None, int]]:
    """The (source, line) of every printed line a finding cites (not what a report mentions, not a symptom)."""
    return {(e.provenance.source, e.provenance.line) for b in f.bindings.values() for e in b.evidence
            if e.kind not in ("mention", "reported_symptom") and e.provenance.line is not None}


def _read_lines(findings: Sequence[Finding]) -> set[tuple[str | None, int]]:
    """The lines that specific rules (not catalog families, not words or priors alone) read."""
    return set().union(*(_lines_of(f) for f in findings
                         if f.rule.family != CATALOG and not prior_only(f) and not words_only(f)))


def _superseded(f: Finding, read: set[tuple[str | None, int]]) -> bool:
    """A catalog family finding whose every line a specific rule also read (for whatever cause): the family says
    what a message means when no rule of its own speaks for it, so there it ranks with the restatements."""
    return f.rule.family == CATALOG and bool(lines := _lines_of(f)) and lines <= read


def prior_only(f: Finding) -> bool:
    """The finding rests on nothing but a symptom (told with --symptom, or implied by an artifact)."""
    cited = [e for b in f.bindings.values() for e in b.evidence]
    return bool(cited) and all(e.kind == "reported_symptom" for e in cited)


def words_only(f: Finding) -> bool:
    """The finding rests on what the report mentions (and a symptom), no line a program printed: it orders the
    symptom's causes above the bare prior but never above a cause that a log line, dump or artifact backs."""
    kinds = {e.kind for b in f.bindings.values() for e in b.evidence}
    return "mention" in kinds and kinds <= {"mention", "reported_symptom"}


def specificity(f: Finding) -> int:
    """How narrowly the rule's conditions pin the evidence down: conditions and their parameters."""
    calls = [*f.rule.match, *f.outcome.when]
    return sum(1 + len(c.params.get("where") or {}) + bool(c.params.get("frames_any")) for c in calls if not c.negate)


def _first_time(group: Sequence[Finding]) -> float:
    times = [e.time for f in group for b in f.bindings.values() for e in b.evidence if e.time is not None]
    return min(times) if times else float("inf")


RUNNER_UP_FACTOR = 0.5  # a cause of the runner-up symptom scores half the guessed symptom's first cause
PRIOR_SUMMARY = "from the runbook's symptom table for"  # how a cause that only a symptom implies is introduced
CATALOG = "catalog"  # rules/catalog/: what a family of catalog signatures means when no rule of its own speaks


def rank_causes(findings: Sequence[Finding], told: set[str], multi_process: bool = False) -> list[Cause]:
    """Group findings by cause, combine their scores, apply the symptom prior, order best first.

    Causes backed by evidence come first, then causes backed only by what the report mentions (a word
    never outranks a line), then causes whose only backing is a catalog family reading lines a specific rule read
    too (whatever that rule concluded), then causes that only a symptom implies (the runbook's symptom table: capped
    at low confidence, citing what implied the symptom, never adding to a cause that evidence backs), and last the
    causes whose only backing restates the symptom (a process raised an exception no rule explains:
    ``restates_symptom``) from a pasted fragment or from inside the distributed machinery: that says no more than
    the symptom does, and the symptom table orders its causes by how often each is the answer (in the labelled
    reports, a restated ``rank_failure`` was right in none of the 21 where it took one of the top three places,
    all of them fragments without frames, raised in torch.distributed or a trainer, or from a multi-process run);
    in a single process (``multi_process`` false: no launcher, rank or rank exit in the evidence) an exception
    raised in its own code or a data library, its traceback showing where, is that process's crash and ranks
    above the prior. Equal scores are ordered by the rules' specificity, then by
    how much evidence each cites, then by the earliest line, then by the cause's place in the symptom's
    prior (the base rate: which of two equally backed causes is the likelier), then by the order a rule
    lists its alternatives in. A catalog family (rules/catalog/) backs a cause
    only where no specific rule does: the same lines are not counted twice."""
    groups: dict[str, list[tuple[Finding, float]]] = defaultdict(list)
    places: dict[str, int] = {}
    base_rate: dict[str, int] = {}  # the cause's place in the symptom prior (its table order), for equal findings
    read = _read_lines(findings)
    for f, score, place in _with_alternatives(findings):
        groups[f.cause].append((f, score))
        places[f.cause] = min(place, places.get(f.cause, place))
        if prior_only(f):
            base_rate[f.cause] = min(place, base_rate.get(f.cause, place))
    ranked = []
    for cause_id, scored in groups.items():
        backed = [(f, sc) for f, sc in scored if not prior_only(f)]
        # a catalog family adds nothing to a specific rule; a rule that rests on the report's words alone does not
        # displace the lines a catalog family read (the cause would fall to the words' tier)
        if any(f.rule.family != CATALOG and not words_only(f) for f, _ in backed):
            backed = [(f, sc) for f, sc in backed if f.rule.family != CATALOG]
        # a finding that only restates the symptom adds no score where anything else backs the cause (still cited)
        restated = bool(backed) and all(f.outcome.restates_symptom for f, _ in backed)
        restating = [] if restated else [f for f, _ in backed if f.outcome.restates_symptom]
        backed = [(f, sc) for f, sc in backed if restated or not f.outcome.restates_symptom]
        only_prior = not backed
        scored = sorted(backed or scored, key=lambda fs: (-fs[1], -specificity(fs[0])))
        group = [f for f, _ in scored]
        best = group[0]
        symptoms = {f.symptom for f in group} | {s for f in group for s in f.rule.symptoms}
        score = apply_prior(combine([sc for _, sc in scored]), best.outcome.confidence, symptoms, told)
        summary = best.message
        if only_prior:
            score = cap_prior(score)
            summary = f"{PRIOR_SUMMARY} {_symptom_source(group)}: {best.message}"
        culprits = sorted(set().union(*(f.culprits for f in group)))
        evidence = _cite(group + restating, with_symptoms=only_prior)
        cause = Cause(
            id=cause_id, refines=best.outcome.refines, score=score, confidence=confidence_of(score),
            symptom=best.symptom, ranks=culprits, summary=summary, evidence=evidence,
            fix=best.rule.fix, rules=[f.rule.id for f in group],
            path=[_path(f) for f in group], experimental=all(f.rule.status == "experimental" for f in group))
        only_words = bool(backed) and all(words_only(f) for f, _ in backed)
        superseded = bool(backed) and all(_superseded(f, read) for f, _ in backed)
        demoted = restated and (multi_process or all(_restates_a_fragment(f) for f, _ in backed))
        tier = 4 if demoted else 3 if only_prior else 2 if restated or superseded else 1 if only_words else 0
        key = (tier, -score, -max(specificity(f) for f in group), -len(evidence), _first_time(group),
               base_rate.get(cause_id, len(base_rate)), places[cause_id], cause_id)
        ranked.append((key, cause))
    ranked.sort(key=lambda kc: kc[0])
    return fold_refinements([c for _, c in ranked])


def fold_refinements(causes: Sequence[Cause]) -> list[Cause]:
    """One entry per vocabulary cause: an entry whose cause (or the cause it refines) an entry above it
    already names adds its evidence, rules and path to that entry instead of taking a place of its own
    (``native_crash`` and ``rank_failure`` below it would otherwise fill two of the top three places)."""
    out: list[Cause] = []
    first: dict[str, Cause] = {}
    for cause in causes:
        base = cause.refines or cause.id
        upper = first.get(base)
        if upper is None:
            first[base] = cause
            out.append(cause)
            continue
        seen = {(e.source, e.line, e.rank, e.text) for e in upper.evidence}
        extra = [e for e in cause.evidence if (e.source, e.line, e.rank, e.text) not in seen]
        upper.evidence = [*upper.evidence, *extra][:MAX_EVIDENCE_PER_CAUSE]
        upper.rules = list(dict.fromkeys([*upper.rules, *cause.rules]))
        upper.path = list(dict.fromkeys([*upper.path, *cause.path]))
    return out


def _multi_process(ctx: Context) -> bool:
    """The evidence shows several processes: a launch that starts them, a rank prefix, or a rank's exit."""
    return bool(ctx.ranks_seen() or ctx.of("rank_exit") or starts_processes(ctx))


@lru_cache(maxsize=1)
def _distributed_machinery() -> tuple[str, ...]:
    return table_list("frame_paths.distributed_machinery")


def _restates_a_fragment(f: Finding) -> bool:
    """The exception a restating finding cites has no frames (a pasted fragment) or was raised inside the
    distributed machinery (rules/tables/frame_paths.yaml)."""
    return all(not e.fields.get("frame_path") or raised_in(e, _distributed_machinery())
               for b in f.bindings.values() for e in b.evidence if e.kind == "log_line" and "exc_type" in e.fields)


def _symptom_source(group: Sequence[Finding]) -> str:
    """What implied the symptom: the --symptom the user gave, or the artifact that suggested it."""
    for f in group:
        for b in f.bindings.values():
            for e in b.evidence:
                if e.kind == "reported_symptom":
                    return e.text or e.symptom
    return group[0].symptom


def _path(f: Finding) -> str:
    steps = [f"{name}={b.value('ranks')}" for name, b in f.bindings.items() if not name.startswith("_")]
    return f"{' & '.join(steps) or 'evidence'} -> {f.rule.id} -> {f.cause}"


def _cite(group: Sequence[Finding], with_symptoms: bool = False) -> list[EvidenceRef]:
    refs: list[EvidenceRef] = []
    seen = set()
    for f in group:
        for b in f.bindings.values():
            for e in b.evidence:
                key = (e.provenance.source, e.provenance.line, e.rank, e.text if e.kind == "reported_symptom" else "")
                if key in seen or (e.kind == "reported_symptom" and not with_symptoms):
                    continue
                seen.add(key)
                refs.append(EvidenceRef(source=e.provenance.source, line=e.provenance.line, rank=e.rank,
                                        host=e.provenance.host, text=(e.text or "")[:500], time=e.time))
    if not refs:
        refs.append(EvidenceRef(text=group[0].message))
    return refs[:MAX_EVIDENCE_PER_CAUSE]


# where a symptom may be guessed from a report's wording: a user's files read post mortem (or the library call),
# never a live hang, a preflight, or the run record (whose facts are never guessed)
GUESSING_COMMANDS = frozenset({"logs", None})


@lru_cache(maxsize=8)
def _cached_ruleset(extra: tuple[str, ...]) -> RuleSet:
    return load_ruleset([Path(p) for p in extra])


def diagnose_evidence(
    evidence: Sequence[Any],
    *,
    symptom: str | None = None,
    skipped: Iterable[Skipped] = (),
    notes: Iterable[str] = (),
    command: str | None = None,
    rule_dirs: Sequence[Path] = (),
) -> Report:
    """Run every rule over the evidence and return the ranked report."""
    told = set(resolve_symptom(symptom)) if symptom else set()
    items = wording.settle(evidence) if command in GUESSING_COMMANDS and not told else list(evidence)
    items += crossrank.derive(items)
    scaling = _scaling(items)
    items += [ReportedSymptom(symptom=s, text=f"--symptom {symptom}") for s in sorted(told)]
    ctx = Context(items)
    ruleset = _cached_ruleset(tuple(str(p) for p in rule_dirs))
    multi = _multi_process(ctx)
    causes = rank_causes(evaluate(ruleset, ctx), told, multi)
    # where only weak evidence speaks, the report's own words may name what was seen ('I run into GPU OOM'), but not
    # a crash: the words 'error' and 'exception' are in nearly every report, and the rules that fired already place
    # the failure (a collective timeout is a hang whatever the words around it)
    inferred = [] if told or (causes and causes[0].confidence != "low") else infer_symptoms(
        items, words_not=("crash",) if causes else ())
    # the last resort, where nothing named a symptom: what the report's wording resembles
    if not (told or causes or inferred) and command in GUESSING_COMMANDS and (guessed := wording.guess(items)):
        inferred = [guessed]
    # a crash that only weak evidence shows (a traceback no rule explains): the words were barred from naming it, so
    # the crash row of the runbook and the rules that read the report's words for a crash apply as if they had
    if not (told or inferred) and causes and causes[0].confidence == "low" and causes[0].symptom == "crash" \
            and command in GUESSING_COMMANDS:
        top = causes[0]
        ref = top.evidence[0] if top.evidence else EvidenceRef(text=top.summary)
        inferred = [from_weak_evidence(top.symptom, top.id, ref.source, ref.line, ref.text or top.summary)]
    if inferred:  # issue 11: what the artifacts are is a weak prior, used only when no strong evidence speaks
        items += [*inferred, ReportedSymptom(symptom=inferred[0].symptom, inferred=True,
                                             text=f"inferred: {inferred[0].basis}")]
        ctx = Context(items)
        causes = rank_causes(evaluate(ruleset, ctx), set(), multi)
        if inferred[0].runner_up and causes and causes[0].summary.startswith(PRIOR_SUMMARY):
            causes = _with_runner_up(ruleset, items, inferred[0], causes, multi)
    report = Report(command=command, causes=causes, skipped=list(skipped), notes=list(notes))
    report.symptom = sorted(told)[0] if len(told) == 1 else _symptom(causes, inferred)
    report.next = _next_steps(ruleset, causes) if causes or command != "preflight" else []
    if inferred:  # the artifact kind, not the evidence, named the symptom: say what would separate its causes
        report.next = list(dict.fromkeys([*inferred[0].missing, *report.next]))[:6]
    rankview.fill(report, ctx)
    if scaling:
        report.scaling = scaling
    return report


def _with_runner_up(ruleset: RuleSet, items: list[Any], inferred: Any, causes: list[Cause],
                    multi_process: bool) -> list[Cause]:
    """A close guess of the symptom (nothing but a prior names a cause): the runner-up symptom's first prior cause
    takes second place, so the top three span both readings; the guessed symptom's first cause stays first."""
    runner = ReportedSymptom(symptom=inferred.runner_up, inferred=True,
                             text=f"inferred, the runner-up to {inferred.symptom}: {inferred.basis}")
    kept = [e for e in items if e.kind != "reported_symptom"]
    named = {c.refines or c.id for c in causes[:2]}
    for cause in rank_causes(evaluate(ruleset, Context([*kept, runner])), set(), multi_process):
        if cause.summary.startswith(PRIOR_SUMMARY) and (cause.refines or cause.id) not in named:
            rest = [c for c in causes[1:] if (c.refines or c.id) != (cause.refines or cause.id)]
            cause.score = round(min(cause.score, causes[0].score) * RUNNER_UP_FACTOR, 4)  # the less likely reading
            return [causes[0], cause, *rest]
    return causes


def _symptom(causes: Sequence[Cause], inferred: Sequence[Any]) -> str | None:
    """The symptom of the best cause, unless only weak evidence speaks and the artifacts suggest one."""
    if causes and (causes[0].confidence != "low" or not inferred):
        return causes[0].symptom
    return inferred[0].symptom if inferred else (causes[0].symptom if causes else None)


def _scaling(items: list[Any]) -> dict[str, Any] | None:
    """Step-time facts (batch contract, eta, dominant term) added to ``items`` when step metrics are present."""
    if not any(e.kind in ("step_metric", "stack_sample") for e in items) or any(e.kind == "scaling_fact" for e in items):
        return None

    analysis = analyze_scaling(items)
    items += analysis.facts
    return analysis.summary or None


def _next_steps(ruleset: RuleSet, causes: Sequence[Cause]) -> list[str]:
    """What to collect next time, from the rules behind the top causes (when they are close)."""
    out: list[str] = []
    top = causes[:3]
    for cause in top:
        for rid in cause.rules:
            for item in ruleset.by_id[rid].collect_next:
                if item not in out:
                    out.append(item)
    if not causes:
        out.append("no rule matched: rerun with NCCL_DEBUG=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL and "
                   "@record on the entry point, and keep every rank's log (torchrun --log-dir)")
    return out[:6]

