"""The validated rule set: rules, signatures and predicates cross-checked, with every error located."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pydantic
from pydantic import ValidationError

import diagnose
import diagnose.cache as cache
import diagnose.probes
from diagnose.errors import RuleError, RuleLocation, RuleSetError
from diagnose.evidence import EVIDENCE_KINDS
from diagnose.predicates import REGISTRY
from diagnose.probes.logs.signatures import EMITS, SignatureSet, declared_signature_names, load_signatures
from diagnose.rulespec import PredicateCall, Rule, load_rules, rule_dirs, rule_files
from diagnose.vocab import CAUSES, SYMPTOMS
from diagnose.yamlload import builtin_rules_dir

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")  # regex: a {name} placeholder of our own message templates
_ROW = re.compile(r"^\| `([A-Za-z]\.[\w.-]+)` \|", re.M)  # regex: a row id of our own ROWS.md table


@dataclass
class RuleSet:
    rules: list[Rule]
    signatures: SignatureSet
    by_id: dict[str, Rule] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {r.id: r for r in self.rules}


@lru_cache(maxsize=1)
def runbook_rows() -> dict[str, str]:
    """Runbook row ids (from the shipped copy of ROWS.md) -> 'symptom' or 'contract'."""
    text = (builtin_rules_dir() / "runbook_rows.md").read_text(encoding="utf-8")
    symptom_part, _, contract_part = text.partition("## Contracts")
    rows = {r: "symptom" for r in _ROW.findall(symptom_part)}
    rows.update({r: "contract" for r in _ROW.findall(contract_part)})
    return rows


def load_ruleset(extra_dirs: Iterable[Path] = ()) -> RuleSet:
    """Load rules and signatures and cross-check them; raise RuleSetError with every problem.

    A rule set that passed every check in an earlier run (the same rule files, signatures, tables and code) is
    read back from the cache as one JSON document: the checks are not repeated while nothing they read changed."""
    extra = list(extra_dirs)
    errors: list[RuleError] = []
    try:
        sigs = load_signatures([d / "signatures" for d in extra if (d / "signatures").is_dir()])
    except RuleSetError as exc:
        errors += exc.errors
        sigs = SignatureSet([])
    name = f"rules-{_ruleset_key(rule_files(rule_dirs(extra)), sigs)}.json" if not errors else ""
    cached = cache.read_json(name) if name else None
    if isinstance(cached, list):
        try:
            return RuleSet([Rule.model_validate(item) for item in cached], sigs)
        except (ValidationError, TypeError):
            pass
    try:
        rules = load_rules(extra)
    except RuleSetError as exc:
        errors += exc.errors
        rules = []
    errors += validate(rules, sigs)
    if errors:
        raise RuleSetError(errors)
    cache.write_json(name, [r.model_dump(mode="json") for r in rules])
    return RuleSet(rules, sigs)


def _ruleset_key(files: list[Path], sigs: SignatureSet) -> str:
    """Digest of everything the checks read: rule files, the signature catalog, the tables and runbook rows, the
    code of the package (predicates, evidence kinds, vocabulary, schema) and pydantic's version."""
    data = builtin_rules_dir()
    parts: list[bytes | str] = ["rules-1", pydantic.VERSION, sigs.digest]
    extras = [*sorted((data / "tables").glob("*.yaml")), data / "runbook_rows.md"]
    code = [p for pkg in (diagnose, diagnose.probes) for p in sorted(Path(pkg.__file__).parent.rglob("*.py"))]
    for path in [*files, *extras, *code]:
        try:
            parts += [str(path), path.read_bytes()]
        except OSError:
            parts += [str(path), "missing"]
    return cache.digest(parts)


def validate(rules: list[Rule], sigs: SignatureSet) -> list[RuleError]:
    """Cross checks: ids, causes, symptoms, kinds, predicates, signatures, placeholders, branches."""
    errors: list[RuleError] = []
    seen: dict[str, str] = {}
    rows = runbook_rows()
    for rule in rules:
        loc = RuleLocation(rule.source, rule.line)

        def err(msg: str, hint: str | None = None, _loc: RuleLocation = loc) -> None:
            errors.append(RuleError(msg, _loc, hint))

        for rid in (rule.id, *rule.aliases):
            if rid in seen:
                err(f"duplicate rule id {rid!r} (also in {seen[rid]})", "to rename one of them")
            seen[rid] = rule.source
        for kind in rule.requires:
            if kind not in EVIDENCE_KINDS:
                err(f"unknown evidence kind {kind!r}", f"one of {sorted(EVIDENCE_KINDS)}")
        for s in rule.symptoms:
            if s not in SYMPTOMS:
                err(f"unknown symptom {s!r}", "an id from CAUSES.md")
        for row in rule.runbook:
            if row not in rows:
                err(f"unknown runbook row {row!r}", "an id from runbooks/ROWS.md")
        bound = _check_calls(rule.match, sigs, err)
        for idx, outcome in enumerate(rule.outcomes):
            names = bound | _check_calls(outcome.when, sigs, err)
            _check_outcome(outcome, names, rule, idx, sigs, err)
    return errors


def _check_outcome(outcome, names: dict[str, PredicateCall], rule: Rule, idx: int,  # noqa: ANN001
                   sigs: SignatureSet, err) -> None:  # noqa: ANN001
    if outcome.cause not in CAUSES and (outcome.refines is None or outcome.refines not in CAUSES):
        err(f"unknown cause {outcome.cause!r}", "an id from CAUSES.md, or a finer id with refines:")
    for alt in outcome.alternatives:
        if alt not in CAUSES or alt == outcome.cause:
            err(f"alternative {alt!r} is not another cause id from CAUSES.md")
    if outcome.symptom and outcome.symptom not in SYMPTOMS:
        err(f"unknown symptom {outcome.symptom!r}")
    if outcome.culprits and outcome.culprits not in names:
        err(f"culprits names unbound {outcome.culprits!r}", "to bind it with 'as:'")
    for ph in _PLACEHOLDER.findall(outcome.message):
        name, _, attr = ph.partition(".")
        call = names.get(name)
        if call is None:
            err(f"message placeholder {{{ph}}} is not bound", "to bind it with 'as:' in match or when")
        elif attr and attr not in REGISTRY[call.predicate].binds and not _signature_field(call, attr, sigs):
            err(f"placeholder {{{ph}}}: {call.predicate} binds no field {attr!r}")
    if idx < len(rule.outcomes) - 1 and not outcome.when:
        err(f"outcome {idx + 1} has no 'when' so the outcomes after it can never fire",
            "to put the unconditional outcome last")


def _signature_field(call: PredicateCall, attr: str, sigs: SignatureSet) -> bool:
    """Whether a signature named by ``call`` extracts a field ``attr`` (a named group)."""
    for name in call.params.get("names") or []:
        for sig in sigs.matching(name) if "*" in name else [sigs.by_name.get(name)]:
            if sig is not None and attr in re.compile(sig.extract or sig.detect).groupindex:
                return True
    return False


SIGNATURE_PARAMS = ("names", "unless_reported")  # predicate parameters that list signature names


@lru_cache(maxsize=1)
def _emitted_names() -> frozenset[str]:
    """Names the code gives its own evidence (read from the sources only when a name is not in the catalog)."""
    return frozenset(d.name for d in declared_signature_names() if d.kind == EMITS)


def _check_calls(calls: Iterable[PredicateCall], sigs: SignatureSet, err) -> dict[str, PredicateCall]:  # noqa: ANN001
    bound: dict[str, PredicateCall] = {}
    for call in calls:
        info = REGISTRY.get(call.predicate)
        if info is None:
            err(f"unknown predicate {call.predicate!r}", f"one of {sorted(REGISTRY)}")
            continue
        params = inspect.signature(info.func).parameters
        for p in call.params:
            if p not in params or p == "ctx":
                err(f"{call.predicate}: unknown parameter {p!r}", f"one of {sorted(set(params) - {'ctx'})}")
        for key in SIGNATURE_PARAMS:
            for name in call.params.get(key, []) or []:
                if name not in sigs.by_name and not ("*" in name and sigs.matching(name)) \
                        and name not in _emitted_names():
                    err(f"{call.predicate}: {key}: unknown signature {name!r}",
                        "a name from rules/signatures/, a family glob such as nccl_ib_* that matches one, or "
                        "a name code emits (EMITS_SIGNATURES)")
        if call.params.get("signature") and call.params["signature"] not in sigs.by_name:
            err(f"{call.predicate}: unknown signature {call.params['signature']!r}")
        if call.bind and not call.negate:
            bound[call.bind] = call
    return bound
