"""Unit tests of diagnose/predicates/artifacts.py: typed evidence in, a Binding with its ranks and fields out."""

from __future__ import annotations

import pytest

from diagnose.context import Context
from diagnose.evidence import ConfigSetting, LaunchSpec, MetricSeries, Provenance, SystemFact
from diagnose.predicates import REGISTRY


def _call(name: str, evidence: list, **params):
    return REGISTRY[name].func(Context(evidence), **params)


def _spec(src: str = "job.sh", line: int = 1, **kw) -> LaunchSpec:
    return LaunchSpec(provenance=Provenance(probe="artifacts", source=src, line=line), **kw)


def _fact(name: str, value, src: str = "node.txt", tool: str = "nvidia-smi") -> SystemFact:
    return SystemFact(tool=tool, name=name, value=value, provenance=Provenance(probe="artifacts", source=src))


def test_procs_exceed_visible_binds_counts_and_the_spec() -> None:
    spec = _spec(launcher="torchrun", procs_per_node=4, cuda_visible_devices="0,1", visible_gpus=2)
    b = _call("launch_check", [spec], check="procs_exceed_visible")
    assert b is not None and b.fields["procs"] == 4 and b.fields["devices"] == 2 and b.evidence == (spec,)
    assert "CUDA_VISIBLE_DEVICES=0,1" in b.fields["where"]
    ok = _spec(launcher="torchrun", procs_per_node=2, cuda_visible_devices="0,1", visible_gpus=2)
    assert _call("launch_check", [ok], check="procs_exceed_visible") is None


def test_procs_exceed_hardware_and_allocation() -> None:
    run = _spec(launcher="torchrun", procs_per_node=8, line=9)
    b = _call("launch_check", [run, _fact("gpu_count", 4)], check="procs_exceed_hardware")
    assert b is not None and (b.fields["procs"], b.fields["devices"]) == (8, 4)
    alloc = _spec(launcher="sbatch", gpus_per_node=2, nodes=1, line=2)
    b = _call("launch_check", [alloc, run], check="procs_exceed_allocation")
    assert b is not None and b.fields["devices"] == 2 and alloc in b.evidence


def test_batch_script_without_srun_and_nodes_disagree() -> None:
    job = _spec(launcher="sbatch", nodes=2, procs_per_node=4, launches_tasks=False, inner_launcher="python")
    b = _call("launch_check", [job], check="batch_script_without_task_launcher")
    assert b is not None and b.fields["procs"] == 8
    srun = _spec(launcher="srun", nodes=2, procs_per_node=1, line=9)
    trun = _spec(launcher="torchrun", nodes=4, procs_per_node=8, line=9)
    b = _call("launch_check", [srun, trun], check="nodes_disagree")
    assert b is not None and (b.fields["procs"], b.fields["devices"]) == (4, 2)


def test_world_product_and_endpoint_port() -> None:
    assert _call("launch_check", [_spec(launcher="mpirun", world_size=16, nodes=2, procs_per_node=6)],
                 check="world_size_not_product").fields["devices"] == 12
    b = _call("launch_check", [_spec(launcher="torchrun", rdzv_backend="c10d", rdzv_endpoint="node-1")],
              check="rdzv_endpoint_without_port")
    assert b is not None and "node-1" in b.fields["where"]
    assert _call("launch_check", [_spec(launcher="torchrun", rdzv_backend="c10d", rdzv_endpoint="[::1]:29400")],
                 check="rdzv_endpoint_without_port") is None
    with pytest.raises(ValueError):
        _call("launch_check", [], check="no_such_check")


def test_system_fact_and_differs() -> None:
    b = _call("system_fact", [_fact("nccl_busbw_large", 1.2, tool="nccl-tests")], facts=["nccl_busbw_large"], below=10)
    assert b is not None and b.fields["value"] == 1.2 and b.fields["tool"] == "nccl-tests"
    assert _call("system_fact", [_fact("topo_nvlink", True)], facts=["topo_nvlink"], equals=False) is None
    a, c = _fact("torch_version", "2.1.0", "n1.txt"), _fact("torch_version", "2.3.1", "n2.txt")
    b = _call("system_fact_differs", [a, c], facts=["torch_version"])
    assert b is not None and b.fields["values"] == "2.1.0 vs 2.3.1" and b.fields["sources"] == 2


def test_batch_contract_changed_needs_same_lr() -> None:
    def cfg(src: str, lr: float, n: int) -> ConfigSetting:
        return ConfigSetting(format="deepspeed", local_batch=8, lr=lr, num_processes=n,
                             provenance=Provenance(probe="artifacts", source=src))
    b = _call("batch_contract_changed", [cfg("a.json", 1e-4, 4), cfg("b.json", 1e-4, 8)])
    assert b is not None and b.fields["before"] == "4 x 8 x 1" and b.fields["after"] == "8 x 8 x 1"
    assert b.fields["changed"] == "world"
    assert _call("batch_contract_changed", [cfg("a.json", 1e-4, 4), cfg("b.json", 2e-4, 8)]) is None


def test_metric_spread_across_seeds_and_world_sizes() -> None:
    runs = [MetricSeries(name="accuracy", seed=s, values=(v,)) for s, v in ((1, 76.1), (2, 71.3), (3, 75.9))]
    b = _call("metric_spread", runs, across="seed", at_least=0.02)
    assert b is not None and (b.fields["low"], b.fields["high"]) == (71.3, 76.1)
    assert _call("metric_spread", runs, across="world_size", at_least=0.02) is None
    sizes = [MetricSeries(name="loss", world_size=n, values=(v,), rank=0) for n, v in ((1, 2.0), (8, 2.6))]
    b = _call("metric_spread", sizes, across="world_size", at_least=0.05)
    assert b is not None and b.ranks == frozenset({0})


def test_config_setting_predicate() -> None:
    cfg = ConfigSetting(format="accelerate", fsdp_state_dict_type="FULL_STATE_DICT")
    b = _call("config_setting", [cfg], field="fsdp_state_dict_type", equals="full_state_dict")
    assert b is not None and b.fields["format"] == "accelerate"
    assert _call("config_setting", [cfg], field="zero_stage", at_least=2) is None


def test_config_differs_across_files() -> None:
    a = ConfigSetting(format="deepspeed", zero_stage=2, provenance=Provenance(probe="artifacts", source="a/ds.json"))
    b = ConfigSetting(format="deepspeed", zero_stage=3, provenance=Provenance(probe="artifacts", source="b/ds.json"))
    got = _call("config_differs", [a, b], fields=["zero_stage"])
    assert got is not None and got.fields["values"] == "2 vs 3" and got.evidence == (a, b)
    assert _call("config_differs", [a], fields=["zero_stage"]) is None
