"""The launch contract, checked over pasted artifacts: world size = nodes x processes per node, one process per
GPU, a batch script starts its tasks with srun, and a training script's own calls agree with its launcher.
"""

from __future__ import annotations

from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, bind, by_source, predicate
from diagnose.predicates.launch_requests import (
    hardware_gpu_count,
    host_memory_small,
    interpreter_as_script,
    mpirun_on_local_host,
    multi_node,
    multi_node_launch,
    multi_node_without_node_rank,
    python_after_visible_gpus,
    starts_processes,
)
from diagnose.probes.artifacts.source import to_int

_FIELDS = ("launcher", "procs", "devices", "where", "detail")


def _procs(spec: Any) -> int | None:
    return spec.procs_per_node if spec.launcher != "sbatch" else None


def _exceeds(ctx: Context, against: str) -> Binding | None:
    hardware = hardware_gpu_count(ctx) if against == "hardware" else None
    for source, specs in by_source(ctx, "launch_spec").items():
        alloc = next((s for s in specs if s.launcher in ("sbatch", "srun") and s.gpus_per_node), None)
        env = next((s for s in specs if s.launcher in ("env", "kubernetes") and s.visible_gpus is not None), None)
        for spec in specs:
            p = _procs(spec)
            if not p or p < 2 and against != "visible":
                continue
            if against == "visible":
                visible = spec.visible_gpus if spec.visible_gpus is not None else (env.visible_gpus if env else None)
                if visible is not None and p > visible:
                    cited = [spec] + ([env] if env and spec.visible_gpus is None else [])
                    return bind(cited, launcher=spec.launcher, procs=p, devices=visible,
                                 where=f"CUDA_VISIBLE_DEVICES={spec.cuda_visible_devices or env.cuda_visible_devices}",
                                 detail=source)
            elif against == "allocation" and spec.launcher == "kubernetes" and spec.gpus_per_node and p > spec.gpus_per_node:
                return bind([spec], launcher=spec.launcher, procs=p, devices=spec.gpus_per_node,
                             where=f"the pod ({spec.gpus_per_node} GPUs asked for, nvidia.com/gpu)", detail=source)
            elif against == "allocation" and alloc is not None and spec is not alloc and spec.launcher != "srun":
                if p > alloc.gpus_per_node:
                    return bind([spec, alloc], launcher=spec.launcher, procs=p, devices=alloc.gpus_per_node,
                                 where=f"the {alloc.launcher} allocation ({alloc.gpus_per_node} GPUs per node)",
                                 detail=source)
            elif against == "hardware" and hardware is not None and p > hardware[0]:
                return bind([spec, hardware[1]], launcher=spec.launcher, procs=p, devices=hardware[0],
                             where=f"{hardware[1].tool} ({hardware[0]} GPUs)", detail=source)
    return None


def _batch_without_starter(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        if spec.launcher != "sbatch" or spec.launches_tasks is not False:
            continue
        tasks = (spec.nodes or 1) * (spec.procs_per_node or 1)
        if (spec.nodes or 1) > 1 or (tasks > 1 and spec.inner_launcher in (None, "python")):
            inner = spec.inner_launcher or "its command"
            return bind([spec], launcher="sbatch", procs=tasks, devices=spec.gpus_per_node or "?",
                         where=f"{inner} runs once, on the first node", detail=spec.text or "")
    return None


def _nodes_disagree(ctx: Context) -> Binding | None:
    for source, specs in by_source(ctx, "launch_spec").items():
        outer = [s for s in specs if s.launcher in ("sbatch", "srun") and s.nodes]
        inner = [s for s in specs if s.launcher in ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate")
                 and s.nodes]
        for o in outer:
            for i in inner:
                if i.nodes != o.nodes:
                    return bind([i, o], launcher=i.launcher, procs=i.nodes, devices=o.nodes,
                                 where=f"{i.launcher} says {i.nodes} node(s), {o.launcher} gives {o.nodes}",
                                 detail=source)
        # srun's own --ntasks-per-node (or --ntasks over --nodes) overrides the batch script's; srun without them
        # inherits the script's
        per_node = [s for s in specs if s.launcher in ("torchrun", "torch.distributed.launch") and (s.procs_per_node or 1) > 1]
        t = _tasks_per_node([s for s in specs if s.launcher == "srun"]) or _tasks_per_node(
            [s for s in specs if s.launcher == "sbatch"])
        if t is not None and t[1] > 1 and per_node:
            (t, n), p = t, per_node[0]
            return bind([p, t], launcher=p.launcher, procs=n * p.procs_per_node, devices=p.procs_per_node,
                         where=f"{n} {t.launcher} tasks per node each start {p.procs_per_node} "
                               f"{p.launcher} processes", detail=source)
    return None


def _tasks_per_node(specs: list[Any]) -> tuple[Any, int] | None:
    """(spec, tasks per node) of the first Slurm spec that states its tasks per node: --ntasks-per-node, or
    --ntasks divided over --nodes (sbatch/srun docs: -n is the total, --ntasks-per-node per node)."""
    for s in specs:
        n = s.procs_per_node or (s.world_size // s.nodes if s.world_size and s.nodes and s.world_size % s.nodes == 0
                                 else None)
        if n is not None:
            return s, n
    return None


def _world_product(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        if spec.world_size and spec.nodes and spec.procs_per_node and spec.world_size != spec.nodes * spec.procs_per_node:
            return bind([spec], launcher=spec.launcher, procs=spec.world_size, devices=spec.nodes * spec.procs_per_node,
                         where=f"world size {spec.world_size} != {spec.nodes} nodes x {spec.procs_per_node} per node",
                         detail=spec.text or "")
    return None


def _endpoint_no_port(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        ep = spec.rdzv_endpoint
        if ep and spec.rdzv_backend == "c10d" and ":" not in ep.replace("[", "").split("]")[-1]:
            return bind([spec], launcher=spec.launcher, procs=spec.nodes or "?", devices="?",
                         where=f"--rdzv-endpoint {ep} names no port", detail=spec.text or "")
    return None


# launchers whose per-node process count is one process per GPU (torchrun's --nproc-per-node, deepspeed --num_gpus)
_PER_GPU_LAUNCHERS = ("torchrun", "torch.distributed.launch", "deepspeed")


def _fewer_than_visible(ctx: Context) -> Binding | None:
    """A per-GPU launcher starts fewer processes per node than CUDA_VISIBLE_DEVICES leaves visible: the GPUs past
    the process count get no rank (torchrun's docs: --nproc-per-node is the number of GPUs to use)."""
    for source, specs in by_source(ctx, "launch_spec").items():
        env = next((s for s in specs if s.launcher in ("env", "kubernetes") and s.visible_gpus is not None), None)
        for spec in specs:
            p = spec.procs_per_node
            if spec.launcher not in _PER_GPU_LAUNCHERS or not p:
                continue
            visible = spec.visible_gpus if spec.visible_gpus is not None else (env.visible_gpus if env else None)
            if visible is not None and p < visible:
                cited = [spec] + ([env] if env and spec.visible_gpus is None else [])
                return bind(cited, launcher=spec.launcher, procs=p, devices=visible,
                             where=f"CUDA_VISIBLE_DEVICES={spec.cuda_visible_devices or env.cuda_visible_devices}",
                             detail=source)
    return None


def _fewer_than_script_gpus(ctx: Context) -> Binding | None:
    """torchrun (or torch.distributed.launch) starts fewer processes per node than the GPUs the script's own
    arguments name (``--gpu 0,1,2,3``); without --nproc-per-node it starts one (its default): one rank, one GPU."""
    for spec in ctx.of("launch_spec"):
        p = spec.procs_per_node or spec.procs_default
        if spec.launcher not in ("torchrun", "torch.distributed.launch") or not p or not spec.script_gpus:
            continue
        if p < spec.script_gpus:
            told = "" if spec.procs_per_node else " (no --nproc-per-node: its default)"
            return bind([spec], launcher=spec.launcher, procs=f"{p}{told}", devices=spec.script_gpus,
                        where=f"{spec.script or 'the script'}'s own arguments", detail=spec.text or "")
    return None


def _fewer_than_allocation(ctx: Context) -> Binding | None:
    """A per-GPU launcher starts fewer processes per node than the GPUs the job asked for: the Slurm allocation
    (--gpus-per-node, --gres=gpu:N) or a PyTorchJob pod (nvidia.com/gpu) with an integer nprocPerNode (Kubeflow's
    docs: nprocPerNode is the number of processes per pod, "auto"/"gpu" one per GPU). The GPUs past the process
    count are allocated and idle."""
    for source, specs in by_source(ctx, "launch_spec").items():
        alloc = next((s for s in specs if s.launcher in ("sbatch", "srun") and s.gpus_per_node), None)
        for spec in specs:
            p = spec.procs_per_node
            if not p:
                continue
            if spec.launcher == "kubernetes" and spec.gpus_per_node and p < spec.gpus_per_node:
                return bind([spec], launcher=spec.launcher, procs=p, devices=spec.gpus_per_node,
                             where=f"the pod asks for {spec.gpus_per_node} GPUs (nvidia.com/gpu)", detail=source)
            if spec.launcher in _PER_GPU_LAUNCHERS and alloc is not None and p < alloc.gpus_per_node:
                return bind([spec, alloc], launcher=spec.launcher, procs=p, devices=alloc.gpus_per_node,
                             where=f"the {alloc.launcher} allocation ({alloc.gpus_per_node} GPUs per node)",
                             detail=source)
        if (hit := _srun_python_fewer(ctx, specs, alloc)) is not None:
            return hit
    return None


def _srun_python_fewer(ctx: Context, specs: list[Any], alloc: Any) -> Binding | None:
    """srun starts python itself (no torchrun inside) with fewer tasks per node than the GPUs per node: srun starts
    one process per task (srun docs; Slurm's default is one task per node), so the GPUs past the task count get no
    rank, unless the script spawns its own processes (mp.spawn) or drives every GPU from one (DataParallel). A
    total task count (-n) without a per-node count leaves the layout unknown: no finding."""
    if any(s.launcher == "mp.spawn" or s.wrapper == "DataParallel" for s in ctx.of("launch_spec")):
        return None
    batch = [s for s in specs if s.launcher == "sbatch"]
    for srun in specs:
        if srun.launcher != "srun" or srun.inner_launcher or not (srun.script or "").rsplit("/", 1)[-1].startswith("python"):
            continue
        gpus = srun.gpus_per_node or next((b.gpus_per_node for b in batch if b.gpus_per_node), None)
        stated = _tasks_per_node([srun]) or _tasks_per_node(batch)
        if stated is None and any(s.world_size for s in [srun, *batch]):
            continue
        tasks = stated[1] if stated else 1
        if gpus and tasks < gpus:
            cited = [srun] + [b for b in batch if b.gpus_per_node][:1]
            return bind(cited, launcher="srun", procs=tasks, devices=gpus,
                         where=f"{gpus} GPUs per node are allocated for {tasks} srun task(s) per node, each one "
                               "python process", detail=srun.text or "")
    return None


def _total_over_machines(ctx: Context) -> Binding | None:
    """accelerate's num_processes is the total over all machines: accelerate launch starts num_processes //
    num_machines per machine (huggingface/accelerate:src/accelerate/utils/launch.py, commands/launch.py "The total
    number of processes to be launched in parallel"). A total that num_machines does not divide, or that gives each
    machine fewer processes than the GPUs nvidia-smi/collect_env show, leaves GPUs without a rank."""
    items: list[tuple[Any, int, int, str]] = []
    for c in ctx.of("config_setting"):
        if c.format == "accelerate" and c.num_processes and (c.num_machines or 1) > 1:
            items.append((c, c.num_processes, c.num_machines, "num_processes"))
    for s in ctx.of("launch_spec"):
        if s.launcher == "accelerate" and s.world_size and (s.nodes or 1) > 1:
            items.append((s, s.world_size, s.nodes, "--num_processes"))
    hardware = hardware_gpu_count(ctx)
    for ev, total, machines, name in items:
        per = total // machines
        if total % machines or per == 0:
            return bind([ev], launcher="accelerate", procs=total, devices=machines,
                         where=f"{name}={total} over {machines} machines: {per} per machine, {total % machines} left "
                               "over", detail=ev.text or "")
        if hardware is not None and per < hardware[0]:
            return bind([ev, hardware[1]], launcher="accelerate", procs=per, devices=hardware[0],
                         where=f"{name}={total} is the total over {machines} machines: {per} process(es) per machine "
                               f"for {hardware[0]} GPUs ({hardware[1].tool})", detail=ev.text or "")
    return None


def _threads_oversubscribe(ctx: Context, at_least: int = 128) -> Binding | None:
    """The launch sets OMP_NUM_THREADS above 1 for several processes per node, and threads x processes (plus the
    DataLoader workers of each process) reach ``at_least``: torchrun sets OMP_NUM_THREADS=1 per process by default
    for this reason (torch/distributed/run.py)."""
    for spec in ctx.of("launch_spec"):
        omp = to_int(spec.variables.get("OMP_NUM_THREADS"))
        procs = spec.procs_per_node or 0
        if omp is None or omp < 2 or procs < 2:
            continue
        total = procs * (omp + (spec.loader_workers or 0))
        if total >= at_least:
            workers = f" + {spec.loader_workers} DataLoader workers" if spec.loader_workers else ""
            return bind([spec], launcher=spec.launcher, procs=procs, devices=total,
                         where=f"{procs} processes x ({omp} OMP threads{workers}) = {total} busy threads per node",
                         detail=spec.text or "")
    return None


def _procs_exceed_world(ctx: Context) -> Binding | None:
    """One node's processes outnumber the whole world (world size = nodes x processes per node >= processes per
    node): OpenNMT-py's -gpu_ranks lists more GPUs than -world_size (onmt/utils/parse.py refuses it), an env dump's
    PET_NPROC_PER_NODE above WORLD_SIZE."""
    for spec in ctx.of("launch_spec"):
        if spec.launcher in ("sbatch", "srun", "mpirun", "code") or not spec.world_size or not spec.procs_per_node:
            continue
        if spec.procs_per_node > spec.world_size:
            return bind([spec], launcher=spec.launcher, procs=spec.procs_per_node, devices=spec.world_size,
                         where=f"{spec.procs_per_node} processes per node but a world size of {spec.world_size}",
                         detail=spec.text or "")
    return None


# launchers whose command says how many processes start (a script's own calls, launcher "code", do not)
_STARTERS = ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate", "lightning", "mp.spawn", "srun",
             "mpirun", "composer", "kubernetes", "sbatch", "by_hand", "openmmlab")


def _code(ctx: Context, field: str) -> list[Any]:
    return [s for s in ctx.of("launch_spec") if s.launcher == "code" and getattr(s, field) is not None]


def _started(ctx: Context) -> list[tuple[Any, int, bool]]:
    """(spec, processes it starts, whether that count is the whole world) of every launch that states a count:
    nodes x per node (torchrun's --nnodes defaults to 1), -n/-np/--ntasks/num_processes; mp.spawn's nprocs is
    per node, its node count unknown."""
    out = []
    for s in ctx.of("launch_spec"):
        if s.launcher not in _STARTERS:
            continue
        if s.world_size:
            out.append((s, s.world_size, True))
        elif s.procs_per_node and s.launcher == "mp.spawn":
            out.append((s, s.procs_per_node, False))
        elif s.procs_per_node and (s.nodes or s.launcher in ("torchrun", "torch.distributed.launch")):
            out.append((s, (s.nodes or 1) * s.procs_per_node, True))
    return out


def _world_of_one(ctx: Context) -> Binding | None:
    """A launch whose whole world is one process (torchrun --nproc-per-node=1 on one node, -n 1): one GPU trains.
    Not when another launch of the same paste starts several: the one-process run is then the baseline of a
    comparison between GPU counts, not the failing launch."""
    started = _started(ctx)
    if any(count > 1 for _spec, count, _whole in started):
        return None
    for spec, count, whole in started:
        if whole and count == 1:
            return bind([spec], launcher=spec.launcher, procs=1, devices="?",
                        where=f"{spec.launcher} starts one process in all", detail=spec.text or "")
    return None


def _code_rank_fixed(ctx: Context) -> Binding | None:
    """init_process_group(rank=<a number>) while more than one process starts: every process claims that rank (the
    docstring of torch.distributed.init_process_group: rank in [0, world_size - 1], one per process); or rank=
    a per-node index (LOCAL_RANK) on more than one node: two nodes each bring ranks 0..n-1."""
    for spec in _code(ctx, "code_rank"):
        rank = spec.code_rank.strip()
        if rank.isdigit() and spec.world_size != 1:
            return bind([spec], launcher="init_process_group", procs=spec.world_size or "several",
                         devices=rank, where=f"rank={rank} written into the script", detail=spec.text or "")
        multi = multi_node_launch(ctx)
        if multi is not None and spec.rank_scope == "local":
            return bind([spec, multi], launcher="init_process_group", procs=multi.nodes, devices=rank,
                         where=f"rank={rank}, a per-node index, on {multi.nodes} nodes", detail=spec.text or "")
    return None


def _script_local_rank_fixed(ctx: Context) -> Binding | None:
    """A launcher that starts one process per device (torch.distributed.launch, torchrun, deepspeed) is given a
    fixed --local_rank for the script: every process it starts reads that same local rank."""
    for spec in ctx.of("launch_spec"):
        if spec.script_local_rank is None or spec.procs_per_node == 1 \
                or (spec.procs_per_node is None and spec.procs_default == 1):  # one process: nothing to share
            continue
        return bind([spec], launcher=spec.launcher, procs=spec.procs_per_node or "several",
                    devices=spec.script_local_rank, where=f"--local_rank {spec.script_local_rank} typed on the "
                    "command line", detail=spec.text or "")
    return None


def _code_world_size(ctx: Context) -> Binding | None:
    """init_process_group(world_size=<a number>) differs from the processes the launch starts (mp.spawn's nprocs
    per node must divide it)."""
    for spec in _code(ctx, "world_size"):
        w = spec.world_size
        for launch, n, whole in _started(ctx):
            if (whole and n != w) or (not whole and (w < n or w % n)):
                starts = f"{n} commands typed by hand start one process each" if launch.launcher == "by_hand" \
                    else f"{launch.launcher} starts {n} process(es)" + ("" if whole else " per node")
                return bind([spec, launch], launcher=launch.launcher, procs=n, devices=w,
                            where=f"the script says world_size={w}, {starts}", detail=spec.text or "")
    return None


def _batch_vs_config_name(ctx: Context) -> Binding | None:
    """The samples per step a run takes (nodes x processes x batch per process) differ from the layout its config's
    name was tuned for (OpenMMLab's {N}xb{B}: N GPUs x B per GPU), so B_eff changed."""
    for spec in ctx.of("launch_spec"):
        if not (spec.design_world and spec.design_batch and spec.procs_per_node):
            continue
        world, local = spec.processes or spec.procs_per_node, spec.local_batch or spec.design_batch
        if (run := world * local) != (tuned := spec.design_world * spec.design_batch):
            lr = "with --auto-scale-lr" if spec.auto_scale_lr else "and nothing rescales the LR (no --auto-scale-lr)"
            return bind([spec], launcher=spec.launcher, procs=world, devices=spec.design_world,
                         where=f"the config is named for {spec.design_world} GPUs x {spec.design_batch} = {tuned} "
                               f"samples per step; this run takes {world} x {local} = {run}, {lr}",
                         detail=spec.text or "")
    return None


def _code_device_global(ctx: Context) -> Binding | None:
    """A device index taken from the global rank on more than one node: on the second node the rank exceeds the
    GPUs there (torchrun sets LOCAL_RANK for the device, RANK for the process group; torch/distributed/run.py)."""
    multi = multi_node_launch(ctx)
    if multi is None:
        return None
    for spec in _code(ctx, "device_index"):
        if spec.device_scope == "global":
            return bind([spec, multi], launcher=multi.launcher, procs=multi.nodes, devices=spec.device_index,
                         where=f"the device index is {spec.device_index}, a global rank, on {multi.nodes} nodes",
                         detail=spec.text or "")
    return None


def _code_dataparallel(ctx: Context) -> Binding | None:
    """nn.DataParallel (one process driving every GPU by threads) in a script that is launched as several
    processes or initialises a process group: DistributedDataParallel was meant."""
    for spec in _code(ctx, "wrapper"):
        if spec.wrapper != "DataParallel":
            continue
        many = next((s for s, n, _ in _started(ctx) if n > 1), None) or next(iter(_code(ctx, "code_rank")), None)
        if many is not None:
            return bind([spec, many], launcher=many.launcher, procs="several", devices="all",
                         where="nn.DataParallel inside a multi-process launch", detail=spec.text or "")
    return None


def _code_dataparallel_alone(ctx: Context) -> Binding | None:
    """nn.DataParallel in a script that runs as one process: every step it replicates the model to each GPU, scatters
    the batch over them and gathers the outputs, in one Python process (threads under the GIL)."""
    if _code_dataparallel(ctx) is not None:
        return None
    for spec in _code(ctx, "wrapper"):
        if spec.wrapper == "DataParallel":
            return bind([spec], launcher="code", procs=1, devices="all", where="nn.DataParallel in one process",
                        detail=spec.text or "")
    return None


def _trainer_vs_slurm(ctx: Context) -> Binding | None:
    """Lightning's Trainer(devices=, num_nodes=) disagrees with the Slurm allocation: under Slurm, Lightning takes
    its ranks from srun, and devices must equal --ntasks-per-node and num_nodes --nodes (Lightning's docs,
    clouds/cluster_advanced)."""
    slurm = [s for s in ctx.of("launch_spec") if s.launcher in ("sbatch", "srun") and (s.procs_per_node or s.nodes)]
    for spec in ctx.of("launch_spec"):
        if spec.launcher != "code" or spec.wrapper != "lightning":
            continue
        for s in slurm:
            for mine, theirs, what, flag in ((spec.procs_per_node, s.procs_per_node, "devices", "--ntasks-per-node"),
                                             (spec.nodes, s.nodes, "num_nodes", "--nodes")):
                if mine and theirs and mine != theirs:
                    return bind([spec, s], launcher=s.launcher, procs=theirs, devices=mine,
                                 where=f"Trainer({what}={mine}) but {s.launcher} {flag}={theirs}", detail=spec.text or "")
    return None


def _code_loader_unsharded(ctx: Context) -> Binding | None:
    """Under DDP, the training DataLoader shuffles with no sampler and no DistributedSampler is named: every rank
    reads the whole dataset (torch/utils/data/distributed.py)."""
    for spec in _code(ctx, "loader_sampler"):
        if spec.loader_sampler == "none":
            return bind([spec], launcher="code", procs="every", devices="the whole dataset",
                         where="DataLoader(shuffle=True) without a DistributedSampler under DDP", detail=spec.text or "")
    return None


def _trainer_sampler_off(ctx: Context) -> Binding | None:
    """Lightning's Trainer(use_distributed_sampler=False) (replace_sampler_ddp=False before 2.0) on more than one
    device, and the script builds no sharding sampler of its own: Lightning adds no DistributedSampler, so every
    process iterates the whole dataset (the Trainer's docs: pass False "and add your own distributed sampler").
    Quiet for Trainer(devices=1) on one node."""
    for spec in ctx.of("launch_spec"):
        flag = spec.loader_sampler or ""
        if spec.launcher != "code" or spec.wrapper != "lightning" or not flag.endswith("=False"):
            continue
        if spec.procs_per_node == 1 and (spec.nodes or 1) == 1:
            continue
        return bind([spec], launcher="lightning", procs=spec.procs_per_node or "every", devices="the whole dataset",
                    where=f"Trainer({flag}) and builds no DistributedSampler itself", detail=spec.text or "")
    return None


CHECKS = {
    "starts_processes": starts_processes,
    "interpreter_as_script": interpreter_as_script,
    "procs_fewer_than_visible": _fewer_than_visible,
    "procs_fewer_than_script_gpus": _fewer_than_script_gpus,
    "threads_oversubscribe": _threads_oversubscribe,
    "procs_fewer_than_allocation": _fewer_than_allocation,
    "total_processes_over_machines": _total_over_machines,
    "procs_exceed_visible": lambda ctx: _exceeds(ctx, "visible"),
    "procs_exceed_allocation": lambda ctx: _exceeds(ctx, "allocation"),
    "procs_exceed_hardware": lambda ctx: _exceeds(ctx, "hardware"),
    "batch_script_without_task_launcher": _batch_without_starter,
    "nodes_disagree": _nodes_disagree,
    "world_size_not_product": _world_product,
    "rdzv_endpoint_without_port": _endpoint_no_port,
    "procs_exceed_world": _procs_exceed_world,
    "world_of_one": _world_of_one,
    "multi_node": multi_node,
    "host_memory_small": host_memory_small,
    "python_after_visible_gpus": python_after_visible_gpus,
    "mpirun_on_local_host": mpirun_on_local_host,
    "multi_node_without_node_rank": multi_node_without_node_rank,
    "code_rank_fixed": _code_rank_fixed,
    "script_local_rank_fixed": _script_local_rank_fixed,
    "code_world_size_differs": _code_world_size,
    "batch_differs_from_config_name": _batch_vs_config_name,
    "code_device_from_global_rank": _code_device_global,
    "code_dataparallel_under_launch": _code_dataparallel,
    "code_dataparallel_one_process": _code_dataparallel_alone,
    "code_loader_without_sampler": _code_loader_unsharded,
    "trainer_layout_vs_slurm": _trainer_vs_slurm,
    "trainer_sampler_disabled": _trainer_sampler_off,
}


@predicate(binds=_FIELDS, kinds=("launch_spec", "system_fact", "config_setting"))
def launch_check(ctx: Context, check: str) -> Binding | None:
    """A launch-contract check fails: procs_exceed_visible|_allocation|_hardware, procs_fewer_than_visible,
    procs_fewer_than_script_gpus, threads_oversubscribe, procs_fewer_than_allocation, total_processes_over_machines
    (accelerate's num_processes vs num_machines x GPUs), batch_script_without_task_launcher, nodes_disagree,
    world_size_not_product, rdzv_endpoint_without_port, procs_exceed_world, world_of_one (a world of one process),
    multi_node (two or more nodes), host_memory_small (Slurm, at most 8 GiB per task), python_after_visible_gpus
    (several GPUs made visible, then plain python, no launcher), mpirun_on_local_host (mpirun -n over a node's GPUs,
    no hosts, no scheduler), multi_node_without_node_rank (torchrun, several nodes, static rendezvous, no
    --node-rank), script_local_rank_fixed (--local_rank N by hand), starts_processes (something starts the ranks),
    interpreter_as_script (torchrun, accelerate or deepspeed told to run "python"), batch_differs_from_config_name
    (OpenMMLab's {N}xb{B} config name against the GPUs and batch the run uses); a script's own calls:
    code_rank_fixed, code_world_size_differs, code_device_from_global_rank, code_dataparallel_under_launch,
    code_dataparallel_one_process, code_loader_without_sampler, trainer_layout_vs_slurm, trainer_sampler_disabled
    (Lightning told to add no DistributedSampler, the script adds none)."""
    if check not in CHECKS:
        raise ValueError(f"unknown launch check {check!r}: one of {sorted(CHECKS)}")
    return CHECKS[check](ctx)
