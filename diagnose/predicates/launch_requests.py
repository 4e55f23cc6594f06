"""What a launch asks of the cluster, checked over pasted artifacts: the nodes it spans, the host memory a scheduler
gives each task, the GPUs a tool saw, and how the processes are started (launch checks ``multi_node``,
``host_memory_small``, ``python_after_visible_gpus``, ``mpirun_on_local_host``, ``multi_node_without_node_rank``,
``starts_processes``, ``interpreter_as_script``)."""

from __future__ import annotations

from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, bind, by_source
from diagnose.units import slurm_mib

USES_SIGNATURES = frozenset({"job_script_python_without_launcher", "python_child_process_failed",
                             "spawn_process_raised"})
GPU_COUNT_TOOLS = ("nvidia-smi", "nvidia-smi-topo", "collect_env")


def hardware_gpu_count(ctx: Context) -> tuple[int, Any] | None:
    """(the largest GPU count a system tool printed, its fact), or None."""
    counts = [f for f in ctx.of("system_fact") if f.name == "gpu_count" and f.tool in GPU_COUNT_TOOLS
              and isinstance(f.value, int) and f.value > 0]
    return (max(f.value for f in counts), max(counts, key=lambda f: f.value)) if counts else None


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


def python_after_visible_gpus(ctx: Context) -> Binding | None:
    """A file that makes several GPUs visible (``export CUDA_VISIBLE_DEVICES=0,1,...``) and then starts the script
    with plain python on a later line, with no launcher in the file: one process sees every GPU."""
    for src, specs in by_source(ctx, "launch_spec").items():
        if any(s.launcher != "env" for s in specs):
            continue  # a launcher in the file starts the processes
        spec = next((s for s in specs if (s.visible_gpus or 0) >= 2), None)
        if spec is None:
            continue
        first = spec.provenance.line or 0
        starts = [e for e in ctx.lines("job_script_python_without_launcher")
                  if e.provenance.source == src and (e.provenance.line or 0) > first]
        if starts:
            return bind([spec, starts[0]], launcher="python", procs=1, devices=spec.visible_gpus,
                        where=f"{spec.visible_gpus} visible GPUs, then plain python on line {starts[0].provenance.line}",
                        detail=starts[0].text or "")
    return None


def mpirun_on_local_host(ctx: Context, most_gpus: int = 8) -> Binding | None:
    """An mpirun/mpiexec launch of more processes than one node's GPUs (the hardware's count where a tool printed
    it, else ``most_gpus``) that names no hosts (-H, --host, --hostfile) outside a scheduler's allocation: Open MPI
    and MPICH then start every process on the local host."""
    specs = ctx.of("launch_spec")
    if any(s.launcher in ("srun", "sbatch", "kubernetes") for s in specs):
        return None
    hardware = hardware_gpu_count(ctx)
    limit = hardware[0] if hardware else most_gpus
    for spec in specs:
        if spec.launcher != "mpirun" or spec.hosts or spec.procs_per_node or (spec.world_size or 0) <= limit:
            continue
        if any("hostfile" in k.lower() or k.startswith("SLURM_") for k in spec.variables):
            continue
        return bind([spec], launcher="mpirun", procs=spec.world_size, devices=limit,
                    where=f"-n {spec.world_size} with no -H/--hostfile starts every process on this host",
                    detail=spec.text or "")
    return None


def multi_node_without_node_rank(ctx: Context) -> Binding | None:
    """A torchrun / torch.distributed.launch command for two or more nodes with the static rendezvous (no
    --rdzv-backend, or static) that gives no --node-rank: every node that runs it is node 0."""
    for spec in ctx.of("launch_spec"):
        if spec.launcher not in ("torchrun", "torch.distributed.launch") or (spec.nodes or 0) < 2:
            continue
        if spec.node_rank is not None or (spec.rdzv_backend or "static") != "static":
            continue
        if any(k in spec.variables for k in ("NODE_RANK", "PET_NODE_RANK", "GROUP_RANK")):
            continue
        return bind([spec], launcher=spec.launcher, procs=spec.procs_per_node or "?", devices=spec.nodes,
                    where=f"--nnodes {spec.nodes} with the static rendezvous and no --node-rank",
                    detail=spec.text or "")
    return None


def starts_processes(ctx: Context) -> Binding | None:
    """Some launch in the evidence starts the ranks itself (a launcher, batch script, mp.spawn, pod spec, or a
    child process's traceback in the log): used negated, for a script started with plain python alone."""
    for spec in ctx.of("launch_spec"):
        if spec.launcher not in ("env", "code"):
            return bind([spec], launcher=spec.launcher, procs=spec.procs_per_node or "?", devices="?",
                        where=f"{spec.launcher} starts the processes", detail=spec.text or "")
    # a child process's traceback header (multiprocessing.Process, mp.spawn): the program started its own workers
    if child := ctx.lines("python_child_process_failed") or ctx.lines("spawn_process_raised"):
        return bind(child[:1], launcher="multiprocessing", procs="?", devices="?",
                    where="the program starts its own worker processes", detail=child[0].text or "")
    return None


# launchers that start the training script with their own Python interpreter (``python`` as the script is a file
# named python to them); srun and mpirun run any program, so ``srun python train.py`` is right
_INTERPRETER_LAUNCHERS = ("torchrun", "torch.distributed.launch", "torch.distributed.run", "accelerate", "deepspeed")


def interpreter_as_script(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        script = (spec.script or "").rsplit("/", 1)[-1]
        if spec.launcher in _INTERPRETER_LAUNCHERS and script.rstrip("0123456789.") == "python":
            return bind([spec], launcher=spec.launcher, procs=spec.procs_per_node or "?", devices="?",
                        where=f"{spec.launcher} is given {spec.script} as the script to run", detail=spec.text or "")
    return None
