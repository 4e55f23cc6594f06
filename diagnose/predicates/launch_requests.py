"""What a launch asks of the cluster, checked over pasted artifacts: the nodes it spans and the host memory a
scheduler gives each task (launch checks ``multi_node`` and ``host_memory_small``)."""

from __future__ import annotations

from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, bind
from diagnose.units import slurm_mib


def host_memory_small(ctx: Context, at_most_gib: float = 8) -> Binding | None:
    """A Slurm request that gives each task at most ``at_most_gib`` GiB of host memory (--mem-per-cpu times
    --cpus-per-task, or --mem per node over the tasks of a node): the job's cgroup kills a process that grows past
    it, and a training process with its DataLoader workers often does."""
    for spec in ctx.of("launch_spec"):
        if spec.launcher not in ("srun", "sbatch"):
            continue
        per_task = None
        if (per_cpu := slurm_mib(spec.mem_per_cpu)) is not None:
            per_task = per_cpu * (spec.cpus_per_task or 1)
        elif (per_node := slurm_mib(spec.mem)) is not None and spec.procs_per_node \
                and "mem-per-gpu" not in (spec.text or ""):
            per_task = per_node / spec.procs_per_node
        if per_task is not None and per_task <= at_most_gib * 1024:
            asked = f"--mem-per-cpu={spec.mem_per_cpu}" if spec.mem_per_cpu else f"--mem={spec.mem}"
            return bind([spec], launcher=spec.launcher, procs=spec.procs_per_node or "?", devices="?",
                        where=f"{asked} gives each task {per_task / 1024:.1f} GiB of host memory",
                        detail=spec.text or "")
    return None


def multi_node_launch(ctx: Context) -> Any:
    """The first launch (not a script's own calls) that asks for two or more nodes, or None."""
    return next((s for s in ctx.of("launch_spec") if s.launcher != "code" and (s.nodes or 0) > 1), None)


def multi_node(ctx: Context) -> Binding | None:
    """A launch of two or more nodes (the rendezvous and the network between the nodes come into play)."""
    spec = multi_node_launch(ctx)
    if spec is None:
        return None
    return bind([spec], launcher=spec.launcher, procs=spec.nodes, devices="?",
                where=f"{spec.nodes} nodes", detail=spec.text or "")
