"""The catalog families (rules/catalog/): every example of every signature a family names, read as a user pastes
it, gets the family's cause from the whole engine, and no family names a signature that is not in the catalog."""

from __future__ import annotations

import pytest

from diagnose.engine import diagnose_evidence
from diagnose.probes.logs.probe import scan_text
from diagnose.probes.logs.signatures import load_signatures
from diagnose.ruleset import load_ruleset

RULESET = load_ruleset()
FAMILIES = [r for r in RULESET.rules if r.family == "catalog"]
SIGNATURES = load_signatures().by_name
CASES = [(rule.id, name, ex.line) for rule in FAMILIES for call in rule.match if call.predicate == "has_signature"
         for name in call.params["names"] for ex in SIGNATURES[name].examples]


def test_every_family_is_built_on_catalog_signatures() -> None:
    assert len(FAMILIES) >= 30
    for rule in FAMILIES:
        names = [n for c in rule.match for n in c.params.get("names", ())]
        assert names and all(n in SIGNATURES for n in names), rule.id


@pytest.mark.parametrize(("rule_id", "signature", "line"), CASES, ids=[f"{r}:{s}" for r, s, _ in CASES])
def test_signature_examples_get_the_family_cause(rule_id: str, signature: str, line: str) -> None:
    evidence = scan_text(f"[rank1]: {line}\n", source="pasted.log")
    assert signature in {e.signature for e in evidence}, f"{signature} does not match its own example"
    rule = RULESET.by_id[rule_id]
    want = rule.outcomes[0].cause
    causes = diagnose_evidence(evidence).causes
    # a finer cause above the family's (native_crash above rank_failure) takes the family's place and rule
    named = [c.refines if c.refines == want else c.id for c in causes]
    assert want in named, f"{rule_id}: {line!r} -> {[c.id for c in causes]}"
    top = causes[named.index(want)]
    assert top.ranks == [1] or top.rules != [rule_id], f"{rule_id}: culprit rank lost: {top.ranks}"
