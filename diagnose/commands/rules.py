"""`diagnose rules list|show|check|docs`."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import yaml

from diagnose.authoring.docgen import write_docs
from diagnose.authoring.fixtures import run_case
from diagnose.errors import RuleSetError
from diagnose.graph import check_graph
from diagnose.probes.artifacts.spec import check_families
from diagnose.probes.artifacts.wording import check_table
from diagnose.probes.logs.signatures import check_declared
from diagnose.ruleset import load_ruleset


def run_rules(action: str, rule_id: str | None, extra: list[Path], out: Path, stream: TextIO) -> int:
    """Run one rules sub-command; returns the exit status."""
    try:
        ruleset = load_ruleset(extra)
    except RuleSetError as exc:
        for err in exc.errors:
            stream.write(f"{err}\n")
        stream.write(f"{len(exc.errors)} error(s)\n")
        return 2
    if action == "list":
        for r in sorted(ruleset.rules, key=lambda r: (r.family, r.id)):
            causes = ",".join(dict.fromkeys(o.cause for o in r.outcomes))
            stream.write(f"{r.family:<11} {r.id:<45} {r.status:<12} {causes}\n")
        return 0
    if action == "show":
        rule = ruleset.by_id.get(rule_id or "")
        if rule is None:
            stream.write(f"no rule {rule_id!r}\n")
            return 2
        stream.write(Path(rule.source).read_text(encoding="utf-8"))
        return 0
    if action == "check":
        return _check(ruleset, stream)

    written = write_docs(ruleset, out)
    stream.write(f"wrote {written} files under {out}\n")
    return 0


def _check(ruleset, stream: TextIO) -> int:  # noqa: ANN001

    problems = [str(e) for e in check_graph(ruleset)]
    problems += [str(e) for e in check_declared(ruleset.signatures)]
    problems += [str(e) for e in check_families()]  # artifact patterns: examples and near misses
    problems += check_table()  # the wording guess's word counts
    cases = 0
    for rule in ruleset.rules:
        test = Path(rule.source).with_name(f"{rule.id}.test.yaml")
        if not test.exists():
            problems.append(f"{rule.source}: no fixture file {test.name}")
            continue
        doc = yaml.safe_load(test.read_text(encoding="utf-8")) or {}
        items = (doc.get("cases") or {}).items()
        fired = {c["expect"].get("fires") for _, c in items if isinstance(c.get("expect"), dict)}
        if not any(c.get("expect") == "quiet" for _, c in items):
            problems.append(f"{test}: no quiet (near miss) case")
        for o in rule.outcomes:
            if o.cause not in fired:
                problems.append(f"{test}: no case fires outcome {o.cause}")
        for name, case in items:
            cases += 1
            if case.get("todo"):
                continue
            result = run_case(rule.id, case, rule)
            if not result.ok:
                problems.append(f"{test}::{name}: {result.detail}")
    for p in problems:
        stream.write(p + "\n")
    stream.write(f"{len(ruleset.rules)} rules, {len(ruleset.signatures)} signatures, {cases} fixture cases: "
                 f"{'OK' if not problems else f'{len(problems)} problem(s)'}\n")
    return 0 if not problems else 1
