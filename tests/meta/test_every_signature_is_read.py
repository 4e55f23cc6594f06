"""Every catalog signature is read by something, or says it is context.

A signature no rule and no module reads still marks its line as recognised, so the generic exception rules leave
that line alone and the report says nothing about it: a message the catalog knows ends up explaining less than one it
does not. Each signature is therefore read by a rule (a predicate parameter naming it, or a family glob matching
it), declared by a module (``USES_SIGNATURES``), or marked ``context: true`` (a banner, an INFO line, a progress or
setting field: it explains no error line).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from diagnose.probes.logs.signatures import USES, declared_signature_names, load_signatures
from diagnose.ruleset import load_ruleset

RULES = Path(__file__).resolve().parents[2] / "rules"

# predicate parameters that only exclude lines: naming a signature there is not reading it
EXCLUDING = {"ignore", "unless_reported", "unless_after"}


def _named_by_rules() -> set[str]:
    names: set[str] = set()
    for rule in load_ruleset().rules:
        calls = [*rule.match, *(c for o in rule.outcomes for c in o.when)]
        for call in calls:
            for key, value in call.params.items():
                if key in EXCLUDING:
                    continue
                names.update(v for v in (value if isinstance(value, list | tuple) else [value]) if isinstance(v, str))
    return names


def _strings(node: object) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_strings(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_strings(v) for v in node)) if node else set()
    return {node} if isinstance(node, str) else set()


def _named_by_tables() -> set[str]:
    """Names the code tables (rules/tables/) and the artifact readers' data (rules/artifacts/) give."""
    return set().union(*(_strings(yaml.safe_load(p.read_text())) for folder in ("tables", "artifacts")
                         for p in sorted((RULES / folder).glob("*.yaml"))))


def unread_signatures() -> list[str]:
    """Catalog names that no rule, no module and no ``context`` flag accounts for."""
    sigs = load_signatures()
    read = _named_by_rules() | _named_by_tables() | {d.name for d in declared_signature_names() if d.kind == USES}
    globs = [r for r in read if "*" in r]
    return sorted(s.name for s in sigs.signatures if not s.context and s.name not in read
                  and not any(fnmatchcase(s.name, g) for g in globs))


def test_every_signature_is_read_or_context() -> None:
    unread = unread_signatures()
    assert not unread, f"{len(unread)} signatures nothing reads (map them in rules/catalog/ or mark them " \
                       f"context: true): {unread}"
