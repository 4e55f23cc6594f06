"""The probe registry: probes are found through the `diagnose.probes` entry points and validated.

A probe declares `name`, `produces` (evidence kinds), `applies_to(paths)` and `collect(paths)`.
A probe that fails to import or to validate is left out and reported, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from diagnose.evidence import EVIDENCE_KINDS

GROUP = "diagnose.probes"
# evidence that no file probe collects: derived by analyzers, taken live, or given by the user
DERIVED: dict[str, tuple[str, ...]] = {
    "rank_exit": ("crossrank", "live", "hook"),
    "collective_state": ("crossrank", "hook"),
    "stack_sample": ("live", "hook"), "rank_env": ("live", "hook"), "rank_status": ("live", "hook"),
    "memory_state": ("live", "hook"), "step_metric": ("steptime",), "scaling_fact": ("scaling",),
    "reported_symptom": ("cli",), "host_check": ("preflight",), "inferred_symptom": ("artifacts",),
}


@dataclass
class Registry:
    probes: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def register(self, probe: Any) -> None:
        """Add a probe after pluggy-style checks: unique name, known kinds, a collect method."""
        name = getattr(probe, "name", None)
        if not isinstance(name, str) or not name:
            self.errors.append(f"{probe!r}: no name")
            return
        if name in self.probes:
            self.errors.append(f"probe {name!r}: duplicate name")
            return
        unknown = set(getattr(probe, "produces", ())) - EVIDENCE_KINDS
        if unknown:
            self.errors.append(f"probe {name!r}: produces unknown evidence kinds {sorted(unknown)}")
            return
        if not callable(getattr(probe, "collect", None)) or not callable(getattr(probe, "applies_to", None)):
            self.errors.append(f"probe {name!r}: missing collect() or applies_to()")
            return
        self.probes[name] = probe

    def producers(self) -> dict[str, tuple[str, ...]]:
        """Evidence kind -> who produces it (registered probes, analyzers, live probe, hook, CLI)."""
        out: dict[str, list[str]] = {k: list(v) for k, v in DERIVED.items()}
        for name, probe in self.probes.items():
            for kind in probe.produces:
                out.setdefault(kind, []).append(name)
        return {k: tuple(v) for k, v in out.items()}


def load_registry() -> Registry:
    """Every probe of the entry-point group, validated."""
    reg = Registry()
    for ep in entry_points(group=GROUP):
        try:
            cls = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported and skipped
            reg.errors.append(f"probe {ep.name!r} failed to import: {exc}")
            continue
        reg.register(cls)
    return reg
