"""The compiled step-time knowledge of ``rules/signatures/steptime.yaml``, shared by probes and analyzers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from diagnose.probes.logs.signatures import Signature
from diagnose.yamlload import builtin_rules_dir, load_yaml_with_lines

__all__ = ["StepSpec", "steptime_spec", "label_world", "spec_path"]


@dataclass(frozen=True)
class StepSpec:
    """The compiled step-time knowledge of steptime.yaml."""

    signatures: tuple[Signature, ...]
    gate: re.Pattern[str]
    tables: dict[str, re.Pattern[str]]
    labels: dict[str, re.Pattern[str]]
    trace: dict[str, re.Pattern[str]]
    moves: dict[str, dict[str, str]]


def spec_path() -> Path:
    """The steptime signature file shipped with the package."""
    return builtin_rules_dir() / "signatures" / "steptime.yaml"


@lru_cache(maxsize=4)
def steptime_spec(path: str | None = None) -> StepSpec:
    """Load and compile the step-time signatures, tables, labels and trace classes."""
    doc, lines = load_yaml_with_lines(Path(path) if path else spec_path())
    sigs = tuple(
        Signature.model_validate({**item, "source": str(path or spec_path()), "line": lines.get(("signatures", i))})
        for i, item in enumerate(doc["signatures"])
    )
    gate = re.compile("|".join(f"(?:{s.detect})" for s in sigs), re.IGNORECASE | re.MULTILINE)

    def comp(section: str) -> dict[str, re.Pattern[str]]:
        return {k: re.compile(v) for k, v in (doc.get(section) or {}).items()}

    return StepSpec(sigs, gate, comp("tables"), comp("labels"), comp("trace"), dict(doc.get("moves") or {}))


def label_world(label: str, spec: StepSpec | None = None) -> tuple[int | None, bool | None]:
    """World size and 'distributed' flag a run label or file name states, if any."""
    spec = spec or steptime_spec()
    labels = spec.labels
    if labels["single"].search(label):
        return 1, False
    m = labels["world_size"].search(label)
    n = int(m.group("n")) if m else None
    if labels["ddp"].search(label):
        return n, True
    return n, (n > 1 if n else None)


def strip_labels(label: str, spec: StepSpec | None = None) -> str:
    """A run label without the words that say single device or distributed (to pair runs)."""
    spec = spec or steptime_spec()
    text = spec.labels["ddp"].sub(" ", spec.labels["single"].sub(" ", label))
    return " ".join(text.replace(",", " ").lower().split())
