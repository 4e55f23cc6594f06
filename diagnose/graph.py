"""The rule graph (networkx): probe -> evidence -> rule -> cause/symptom, checked for dead ends."""

from __future__ import annotations

import networkx as nx

from diagnose.errors import RuleError, RuleLocation
from diagnose.registry import load_registry
from diagnose.ruleset import RuleSet
from diagnose.vocab import CAUSES


def build_graph(ruleset: RuleSet) -> nx.DiGraph:
    """One typed DiGraph of the whole rule set."""
    g = nx.DiGraph()
    for kind, probes in load_registry().producers().items():
        g.add_node(f"evidence:{kind}", type="evidence")
        for p in probes:
            g.add_edge(f"probe:{p}", f"evidence:{kind}")
            g.nodes[f"probe:{p}"]["type"] = "probe"
    for cause in CAUSES:
        g.add_node(f"cause:{cause}", type="cause")
    for rule in ruleset.rules:
        rn = f"rule:{rule.id}"
        g.add_node(rn, type="rule", family=rule.family)
        for kind in rule.requires:
            g.add_edge(f"evidence:{kind}", rn)
        for o in rule.outcomes:
            g.add_edge(rn, f"cause:{o.cause}")
            if o.refines:
                g.add_edge(f"cause:{o.cause}", f"cause:{o.refines}")
        for s in rule.symptoms:
            g.add_edge(rn, f"symptom:{s}")
            g.nodes[f"symptom:{s}"]["type"] = "symptom"
    return g


def check_graph(ruleset: RuleSet) -> list[RuleError]:
    """Cycles, and rules whose required evidence no probe produces."""
    g = build_graph(ruleset)
    errors: list[RuleError] = []
    if not nx.is_directed_acyclic_graph(g):
        cycle = " -> ".join(u for u, _ in nx.find_cycle(g))
        errors.append(RuleError(f"the rule graph has a cycle: {cycle}", RuleLocation("rules/")))
    for rule in ruleset.rules:
        if not any(nx.ancestors(g, f"evidence:{k}") for k in rule.requires):
            errors.append(RuleError("no probe produces the evidence this rule requires: it can never fire",
                                    RuleLocation(rule.source, rule.line)))
    return errors


def uncovered_causes(ruleset: RuleSet) -> list[str]:
    """Cause ids that no rule concludes."""
    g = build_graph(ruleset)
    return sorted(c for c in CAUSES if g.in_degree(f"cause:{c}") == 0)
