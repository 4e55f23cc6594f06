"""Probes are found through entry points, validated, and every required evidence kind has a producer."""

from diagnose.evidence import EVIDENCE_KINDS
from diagnose.registry import Registry, load_registry


def test_installed_probes_load_and_validate():
    reg = load_registry()
    assert reg.errors == []
    assert {"logs", "checkpoint"} <= set(reg.probes)


def test_every_evidence_kind_has_a_producer():
    assert set(load_registry().producers()) >= EVIDENCE_KINDS


def test_bad_probes_are_refused_with_a_reason():
    class NoKinds:
        name = "bad"
        produces = frozenset({"not_a_kind"})

        def collect(self, paths): ...

        def applies_to(self, paths): ...

    class NoCollect:
        name = "half"
        produces = frozenset({"log_line"})

    reg = Registry()
    reg.register(NoKinds)
    reg.register(NoCollect)
    reg.register(load_registry().probes["logs"])
    reg.register(load_registry().probes["logs"])
    assert reg.errors == ["probe 'bad': produces unknown evidence kinds ['not_a_kind']",
                          "probe 'half': missing collect() or applies_to()", "probe 'logs': duplicate name"]
