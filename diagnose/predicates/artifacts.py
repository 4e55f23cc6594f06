"""Predicates over pasted artifacts: launch specs, configs, system facts and metric tables.

The launch checks follow the launch contract (world size = nodes x processes per node, one process per
GPU, a batch script starts its tasks with srun); the batch checks follow B_eff = N * B_local * A.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate

GPU_COUNT_TOOLS = ("nvidia-smi", "nvidia-smi-topo", "collect_env")
_FIELDS = ("launcher", "procs", "devices", "where", "detail")


def _bind(evidence: Sequence[Any], **fields: Any) -> Binding:
    ranks = frozenset(e.rank for e in evidence if getattr(e, "rank", None) is not None)
    return Binding(ranks, tuple(evidence), fields)


def _gpu_count(ctx: Context) -> tuple[int, Any] | None:
    counts = [f for f in ctx.of("system_fact") if f.name == "gpu_count" and f.tool in GPU_COUNT_TOOLS
              and isinstance(f.value, int) and f.value > 0]
    return (max(f.value for f in counts), max(counts, key=lambda f: f.value)) if counts else None


def _by_source(ctx: Context, kind: str) -> dict[str | None, list[Any]]:
    out: dict[str | None, list[Any]] = defaultdict(list)
    for e in ctx.of(kind):
        out[e.provenance.source].append(e)
    return out


def _procs(spec: Any) -> int | None:
    return spec.procs_per_node if spec.launcher != "sbatch" else None


def _exceeds(ctx: Context, against: str) -> Binding | None:
    hardware = _gpu_count(ctx) if against == "hardware" else None
    for source, specs in _by_source(ctx, "launch_spec").items():
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
                    return _bind(cited, launcher=spec.launcher, procs=p, devices=visible,
                                 where=f"CUDA_VISIBLE_DEVICES={spec.cuda_visible_devices or env.cuda_visible_devices}",
                                 detail=source)
            elif against == "allocation" and alloc is not None and spec is not alloc and spec.launcher != "srun":
                if p > alloc.gpus_per_node:
                    return _bind([spec, alloc], launcher=spec.launcher, procs=p, devices=alloc.gpus_per_node,
                                 where=f"the {alloc.launcher} allocation ({alloc.gpus_per_node} GPUs per node)",
                                 detail=source)
            elif against == "hardware" and hardware is not None and p > hardware[0]:
                return _bind([spec, hardware[1]], launcher=spec.launcher, procs=p, devices=hardware[0],
                             where=f"{hardware[1].tool} ({hardware[0]} GPUs)", detail=source)
    return None


def _batch_without_starter(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        if spec.launcher != "sbatch" or spec.launches_tasks is not False:
            continue
        tasks = (spec.nodes or 1) * (spec.procs_per_node or 1)
        if (spec.nodes or 1) > 1 or (tasks > 1 and spec.inner_launcher in (None, "python")):
            inner = spec.inner_launcher or "its command"
            return _bind([spec], launcher="sbatch", procs=tasks, devices=spec.gpus_per_node or "?",
                         where=f"{inner} runs once, on the first node", detail=spec.text or "")
    return None


def _nodes_disagree(ctx: Context) -> Binding | None:
    for source, specs in _by_source(ctx, "launch_spec").items():
        outer = [s for s in specs if s.launcher in ("sbatch", "srun") and s.nodes]
        inner = [s for s in specs if s.launcher in ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate")
                 and s.nodes]
        for o in outer:
            for i in inner:
                if i.nodes != o.nodes:
                    return _bind([i, o], launcher=i.launcher, procs=i.nodes, devices=o.nodes,
                                 where=f"{i.launcher} says {i.nodes} node(s), {o.launcher} gives {o.nodes}",
                                 detail=source)
        tasks = [s for s in specs if s.launcher in ("sbatch", "srun") and (s.procs_per_node or 1) > 1]
        per_node = [s for s in specs if s.launcher in ("torchrun", "torch.distributed.launch") and (s.procs_per_node or 1) > 1]
        if tasks and per_node:
            t, p = tasks[0], per_node[0]
            return _bind([p, t], launcher=p.launcher, procs=t.procs_per_node * p.procs_per_node, devices=p.procs_per_node,
                         where=f"{t.procs_per_node} {t.launcher} tasks per node each start {p.procs_per_node} "
                               f"{p.launcher} processes", detail=source)
    return None


def _world_product(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        if spec.world_size and spec.nodes and spec.procs_per_node and spec.world_size != spec.nodes * spec.procs_per_node:
            return _bind([spec], launcher=spec.launcher, procs=spec.world_size, devices=spec.nodes * spec.procs_per_node,
                         where=f"world size {spec.world_size} != {spec.nodes} nodes x {spec.procs_per_node} per node",
                         detail=spec.text or "")
    return None


def _endpoint_no_port(ctx: Context) -> Binding | None:
    for spec in ctx.of("launch_spec"):
        ep = spec.rdzv_endpoint
        if ep and spec.rdzv_backend == "c10d" and ":" not in ep.replace("[", "").split("]")[-1]:
            return _bind([spec], launcher=spec.launcher, procs=spec.nodes or "?", devices="?",
                         where=f"--rdzv-endpoint {ep} names no port", detail=spec.text or "")
    return None


# launchers whose per-node process count is one process per GPU (torchrun's --nproc-per-node, deepspeed --num_gpus)
_PER_GPU_LAUNCHERS = ("torchrun", "torch.distributed.launch", "deepspeed")


def _fewer_than_visible(ctx: Context) -> Binding | None:
    """A per-GPU launcher starts fewer processes per node than CUDA_VISIBLE_DEVICES leaves visible: the GPUs past
    the process count get no rank (torchrun's docs: --nproc-per-node is the number of GPUs to use)."""
    for source, specs in _by_source(ctx, "launch_spec").items():
        env = next((s for s in specs if s.launcher in ("env", "kubernetes") and s.visible_gpus is not None), None)
        for spec in specs:
            p = spec.procs_per_node
            if spec.launcher not in _PER_GPU_LAUNCHERS or not p:
                continue
            visible = spec.visible_gpus if spec.visible_gpus is not None else (env.visible_gpus if env else None)
            if visible is not None and p < visible:
                cited = [spec] + ([env] if env and spec.visible_gpus is None else [])
                return _bind(cited, launcher=spec.launcher, procs=p, devices=visible,
                             where=f"CUDA_VISIBLE_DEVICES={spec.cuda_visible_devices or env.cuda_visible_devices}",
                             detail=source)
    return None


def _threads_oversubscribe(ctx: Context, at_least: int = 128) -> Binding | None:
    """The launch sets OMP_NUM_THREADS above 1 for several processes per node, and threads x processes (plus the
    DataLoader workers of each process) reach ``at_least``: torchrun sets OMP_NUM_THREADS=1 per process by default
    for this reason (torch/distributed/run.py)."""
    for spec in ctx.of("launch_spec"):
        omp = to_int_or_none(spec.variables.get("OMP_NUM_THREADS"))
        procs = spec.procs_per_node or 0
        if omp is None or omp < 2 or procs < 2:
            continue
        total = procs * (omp + (spec.loader_workers or 0))
        if total >= at_least:
            workers = f" + {spec.loader_workers} DataLoader workers" if spec.loader_workers else ""
            return _bind([spec], launcher=spec.launcher, procs=procs, devices=total,
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
            return _bind([spec], launcher=spec.launcher, procs=spec.procs_per_node, devices=spec.world_size,
                         where=f"{spec.procs_per_node} processes per node but a world size of {spec.world_size}",
                         detail=spec.text or "")
    return None


# launchers whose command says how many processes start (a script's own calls, launcher "code", do not)
_STARTERS = ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate", "lightning", "mp.spawn", "srun",
             "mpirun", "composer", "kubernetes", "sbatch")


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


def _nodes(ctx: Context) -> Any:
    return next((s for s in ctx.of("launch_spec") if s.launcher != "code" and (s.nodes or 0) > 1), None)


def _code_rank_fixed(ctx: Context) -> Binding | None:
    """init_process_group(rank=<a number>) while more than one process starts: every process claims that rank (the
    docstring of torch.distributed.init_process_group: rank in [0, world_size - 1], one per process); or rank=
    a per-node index (LOCAL_RANK) on more than one node: two nodes each bring ranks 0..n-1."""
    for spec in _code(ctx, "code_rank"):
        rank = spec.code_rank.strip()
        if rank.isdigit() and spec.world_size != 1:
            return _bind([spec], launcher="init_process_group", procs=spec.world_size or "several",
                         devices=rank, where=f"rank={rank} written into the script", detail=spec.text or "")
        multi = _nodes(ctx)
        if multi is not None and spec.rank_scope == "local":
            return _bind([spec, multi], launcher="init_process_group", procs=multi.nodes, devices=rank,
                         where=f"rank={rank}, a per-node index, on {multi.nodes} nodes", detail=spec.text or "")
    return None


def _code_world_size(ctx: Context) -> Binding | None:
    """init_process_group(world_size=<a number>) differs from the processes the launch starts (mp.spawn's nprocs
    per node must divide it)."""
    for spec in _code(ctx, "world_size"):
        w = spec.world_size
        for launch, n, whole in _started(ctx):
            if (whole and n != w) or (not whole and (w < n or w % n)):
                return _bind([spec, launch], launcher=launch.launcher, procs=n, devices=w,
                             where=f"the script says world_size={w}, {launch.launcher} starts {n} process(es)"
                                   + ("" if whole else " per node"), detail=spec.text or "")
    return None


def _code_device_global(ctx: Context) -> Binding | None:
    """A device index taken from the global rank on more than one node: on the second node the rank exceeds the
    GPUs there (torchrun sets LOCAL_RANK for the device, RANK for the process group; torch/distributed/run.py)."""
    multi = _nodes(ctx)
    if multi is None:
        return None
    for spec in _code(ctx, "device_index"):
        if spec.device_scope == "global":
            return _bind([spec, multi], launcher=multi.launcher, procs=multi.nodes, devices=spec.device_index,
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
            return _bind([spec, many], launcher=many.launcher, procs="several", devices="all",
                         where="nn.DataParallel inside a multi-process launch", detail=spec.text or "")
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
                    return _bind([spec, s], launcher=s.launcher, procs=theirs, devices=mine,
                                 where=f"Trainer({what}={mine}) but {s.launcher} {flag}={theirs}", detail=spec.text or "")
    return None


def _code_loader_unsharded(ctx: Context) -> Binding | None:
    """Under DDP, the training DataLoader shuffles with no sampler and no DistributedSampler is named: every rank
    reads the whole dataset (torch/utils/data/distributed.py)."""
    for spec in _code(ctx, "loader_sampler"):
        if spec.loader_sampler == "none":
            return _bind([spec], launcher="code", procs="every", devices="the whole dataset",
                         where="DataLoader(shuffle=True) without a DistributedSampler under DDP", detail=spec.text or "")
    return None


def to_int_or_none(value: Any) -> int | None:
    text = str(value).strip().strip("\"'") if value is not None else ""
    return int(text) if text.isdigit() and len(text) < 6 else None


CHECKS = {
    "procs_fewer_than_visible": _fewer_than_visible,
    "threads_oversubscribe": _threads_oversubscribe,
    "procs_exceed_visible": lambda ctx: _exceeds(ctx, "visible"),
    "procs_exceed_allocation": lambda ctx: _exceeds(ctx, "allocation"),
    "procs_exceed_hardware": lambda ctx: _exceeds(ctx, "hardware"),
    "batch_script_without_task_launcher": _batch_without_starter,
    "nodes_disagree": _nodes_disagree,
    "world_size_not_product": _world_product,
    "rdzv_endpoint_without_port": _endpoint_no_port,
    "procs_exceed_world": _procs_exceed_world,
    "code_rank_fixed": _code_rank_fixed,
    "code_world_size_differs": _code_world_size,
    "code_device_from_global_rank": _code_device_global,
    "code_dataparallel_under_launch": _code_dataparallel,
    "code_loader_without_sampler": _code_loader_unsharded,
    "trainer_layout_vs_slurm": _trainer_vs_slurm,
}


@predicate(binds=_FIELDS, kinds=("launch_spec", "system_fact"))
def launch_check(ctx: Context, check: str) -> Binding | None:
    """A launch-contract check fails: procs_exceed_visible|_allocation|_hardware, procs_fewer_than_visible,
    threads_oversubscribe, batch_script_without_task_launcher, nodes_disagree, world_size_not_product,
    rdzv_endpoint_without_port, procs_exceed_world; a script's own calls: code_rank_fixed, code_world_size_differs,
    code_device_from_global_rank, code_dataparallel_under_launch, code_loader_without_sampler, trainer_layout_vs_slurm."""
    if check not in CHECKS:
        raise ValueError(f"unknown launch check {check!r}: one of {sorted(CHECKS)}")
    return CHECKS[check](ctx)


def _matches(value: Any, equals: Any, at_least: float | None, below: float | None) -> bool:
    if equals is not None:
        return str(value).lower() == str(equals).lower()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return at_least is None and below is None and bool(value)
    return (at_least is None or value >= at_least) and (below is None or value < below)


@predicate(binds=("workers", "procs", "total", "detail"), kinds=("launch_spec",))
def loader_workers_per_node(ctx: Context, at_least: int | None = None, below: int | None = None,
                            min_procs: int = 1) -> Binding | None:
    """A launch command's script asks for DataLoader workers whose total on a node (workers per process x
    processes per node, with at least ``min_procs`` processes) is >= at_least / < below."""
    for spec in ctx.of("launch_spec"):
        if spec.loader_workers is None:
            continue
        procs = spec.procs_per_node or 1
        total = procs * spec.loader_workers
        if procs >= min_procs and (at_least is None or total >= at_least) and (below is None or total < below):
            return _bind([spec], workers=spec.loader_workers, procs=procs, total=total,
                         detail=f"{procs} process(es) per node x {spec.loader_workers} workers = {total}")
    return None


@predicate(binds=("value", "detail", "tool"), kinds=("system_fact",))
def system_fact(ctx: Context, facts: Sequence[str], equals: Any = None, at_least: float | None = None,
                below: float | None = None, contains: Sequence[str] = ()) -> Binding | None:
    """A system tool printed one of the ``facts`` with a value that equals / is >= at_least / is < below, or
    (``contains``) whose text holds one of the given substrings (case-insensitive)."""
    wanted = tuple(str(c).lower() for c in contains)
    hits = [f for f in ctx.of("system_fact") if f.name in facts
            and (any(c in str(f.value).lower() for c in wanted) if wanted
                 else _matches(f.value, equals, at_least, below))]
    if not hits:
        return None
    return _bind(hits[:10], value=hits[0].value, detail=hits[0].detail or hits[0].text or hits[0].name, tool=hits[0].tool)


@predicate(binds=("name", "values", "sources"), kinds=("system_fact",))
def system_fact_differs(ctx: Context, facts: Sequence[str]) -> Binding | None:
    """Files describing different nodes (or runs) report different values of one of the ``facts``."""
    for name in facts:
        by_value: dict[str, list[Any]] = defaultdict(list)
        for f in ctx.of("system_fact"):
            if f.name == name:
                by_value[str(f.value)].append(f)
        sources = {f.provenance.source for fs in by_value.values() for f in fs}
        if len(by_value) > 1 and len(sources) > 1:
            cited = [fs[0] for fs in by_value.values()]
            return _bind(cited, name=name, values=" vs ".join(sorted(by_value)), sources=len(sources))
    return None


@predicate(binds=("format", "value", "field"), kinds=("config_setting",))
def config_setting(ctx: Context, field: str, equals: Any = None, at_least: float | None = None,
                   below: float | None = None) -> Binding | None:
    """A config sets ``field`` to a value that equals / is >= at_least / is < below."""
    hits = [c for c in ctx.of("config_setting") if getattr(c, field, None) is not None
            and _matches(getattr(c, field), equals, at_least, below)]
    if not hits:
        return None
    return _bind(hits[:10], format=hits[0].format, value=getattr(hits[0], field), field=field)


def _contract(ctx: Context) -> list[tuple[str | None, dict[str, Any], list[Any]]]:
    """Per file: world size, local batch, accumulation and LR from its configs and launch specs."""
    out = []
    sources = set(_by_source(ctx, "config_setting")) | set(_by_source(ctx, "launch_spec"))
    configs, launches = _by_source(ctx, "config_setting"), _by_source(ctx, "launch_spec")
    for source in sorted(sources, key=str):
        got: dict[str, Any] = {}
        cited: list[Any] = []
        for c in configs.get(source, []):
            for key in ("local_batch", "accumulation", "lr"):
                if getattr(c, key) is not None:
                    got.setdefault(key, getattr(c, key))
            if c.num_processes:
                got.setdefault("world", c.num_processes * (c.num_machines or 1) if c.format == "lightning"
                               else c.num_processes)
            cited.append(c)
        for s in launches.get(source, []):
            n = s.world_size or ((s.nodes or 1) * s.procs_per_node if s.procs_per_node else None)
            if n and s.launcher not in ("sbatch", "srun", "code"):  # a script's own world_size= is one run's
                got.setdefault("world", n)
                cited.append(s)
        if got:
            out.append((source, got, cited))
    return out


@predicate(binds=("before", "after", "lr", "changed"), kinds=("config_setting", "launch_spec"))
def batch_contract_changed(ctx: Context, same_lr: bool = True) -> Binding | None:
    """Two files give different B_eff = N * B_local * A (world size or accumulation changed) and, with
    ``same_lr``, the same learning rate (or none stated in one of them)."""
    rows = [(s, g, c) for s, g, c in _contract(ctx) if g.get("local_batch") or g.get("accumulation") or g.get("world")]
    for i, (_, a, ca) in enumerate(rows):
        for _, b, cb in rows[i + 1:]:
            changed = [k for k in ("world", "local_batch", "accumulation") if k in a and k in b and a[k] != b[k]]
            if not changed:
                continue
            lr_same = a.get("lr") is None or b.get("lr") is None or abs(a["lr"] - b["lr"]) <= 1e-12 + 0.01 * abs(a["lr"])
            if same_lr and not lr_same:
                continue

            def beff(g: dict[str, Any]) -> str:
                return f"{g.get('world', 'N')} x {g.get('local_batch', 'B')} x {g.get('accumulation', 1)}"
            return _bind([*ca, *cb][:8], before=beff(a), after=beff(b), lr=a.get("lr") or b.get("lr") or "unchanged",
                         changed=", ".join(changed))
    return None


@predicate(binds=("name", "low", "high", "spread", "across"), kinds=("metric_series",))
def metric_spread(ctx: Context, across: str, at_least: float, metrics: Sequence[str] = ()) -> Binding | None:
    """A metric differs by at least ``at_least`` (relative) across seeds or world sizes (``across``)."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for m in ctx.of("metric_series"):
        key = m.seed if across == "seed" else m.world_size
        if key is None or not m.values or (metrics and m.name not in metrics):
            continue
        if m.name in ("throughput", "step_time", "epoch_time"):
            continue
        groups[m.name].append(m)
    for name, items in groups.items():
        if len({(m.seed if across == "seed" else m.world_size) for m in items}) < 2:
            continue
        vals = [m.values[-1] for m in items]
        lo, hi = min(vals), max(vals)
        scale = abs(mean(vals)) or 1.0
        if (hi - lo) / scale >= at_least:
            cited = [min(items, key=lambda m: m.values[-1]), max(items, key=lambda m: m.values[-1])]
            return _bind(cited, name=name, low=lo, high=hi, spread=round((hi - lo) / scale, 4), across=across)
    return None


@predicate(binds=("step", "low", "high", "spread", "runs"), kinds=("step_metric",))
def same_setup_losses_differ(ctx: Context, at_least: float) -> Binding | None:
    """Two or more logs of the same training (same or unstated world size, no rank) report different losses at
    the same epoch and step, by at least ``at_least`` (relative)."""
    by_run: dict[str, dict[tuple[int | None, int], Any]] = defaultdict(dict)
    for m in ctx.of("step_metric"):
        if m.loss is not None and m.rank is None and m.step is not None:
            by_run[m.run or m.provenance.source or ""].setdefault((m.epoch, m.step), m)
    if len(by_run) < 2 or len({next(iter(r.values())).world_size for r in by_run.values()}) > 1:
        return None
    runs = list(by_run.values())
    common = sorted(set.intersection(*(set(r) for r in runs)), key=lambda k: (k[0] or 0, k[1]))
    for key in common:
        cited = [r[key] for r in runs]
        vals = [m.loss for m in cited]
        lo, hi = min(vals), max(vals)
        if (hi - lo) / (abs(mean(vals)) or 1.0) >= at_least:
            return _bind(cited[:4], step=f"epoch {key[0]} step {key[1]}" if key[0] is not None else f"step {key[1]}",
                         low=lo, high=hi, spread=round((hi - lo) / (abs(mean(vals)) or 1.0), 4), runs=len(runs))
    return None


@predicate(binds=("field", "values", "formats"), kinds=("config_setting",))
def config_differs(ctx: Context, fields: Sequence[str]) -> Binding | None:
    """Configs from different files set one of ``fields`` differently (e.g. ZeRO stage between save and resume)."""
    for name in fields:
        by_value: dict[str, list[Any]] = defaultdict(list)
        for c in ctx.of("config_setting"):
            if getattr(c, name, None) is not None:
                by_value[str(getattr(c, name))].append(c)
        sources = {c.provenance.source for cs in by_value.values() for c in cs}
        if len(by_value) > 1 and len(sources) > 1:
            cited = [cs[0] for cs in by_value.values()]
            return _bind(cited, field=name, values=" vs ".join(sorted(by_value)),
                         formats=", ".join(sorted({c.format for c in cited})))
    return None
