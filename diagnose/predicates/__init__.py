"""The closed vocabulary of rule conditions, one module per evidence family.

The registry is built here, explicitly, from the family modules: a predicate exists when its
module is listed below and its function is marked with `base.predicate`.
"""

from __future__ import annotations

from diagnose.predicates import (
    artifacts,
    checkpoint,
    collectives,
    launch_checks,
    logs,
    mentions,
    preflight,
    scaling,
    sequences,
    stacks,
    tables,
)
from diagnose.predicates.base import Binding, PredicateInfo, collect

FAMILIES = (logs, collectives, sequences, stacks, checkpoint, scaling, preflight, artifacts, launch_checks, tables, mentions)

REGISTRY: dict[str, PredicateInfo] = {}
for _module in FAMILIES:
    for _name, _info in collect(_module).items():
        if _name in REGISTRY:
            raise RuntimeError(f"predicate {_name!r} is defined twice ({_module.__name__})")
        REGISTRY[_name] = _info

__all__ = ["REGISTRY", "Binding", "PredicateInfo", "FAMILIES"]
