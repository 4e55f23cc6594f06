"""Predicates over pasted artifacts: launch specs, configs, system facts and metric tables.

The batch checks follow B_eff = N * B_local * A; the launch contract's checks are in ``launch_checks``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, bind, by_source, predicate
from diagnose.ranks import plausible_world

_TIMINGS = ("throughput", "step_time", "epoch_time")  # metric series that time the run rather than score it


def _matches(value: Any, equals: Any, at_least: float | None, below: float | None) -> bool:
    if equals is not None:
        return str(value).lower() == str(equals).lower()
    if isinstance(value, str) and (at_least is not None or below is not None):
        number = _version_number(value)  # a version-like fact stored as text ('10.1', '1.3.4')
        if number is None:
            return False
        value = number
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
            return bind([spec], workers=spec.loader_workers, procs=procs, total=total,
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
    return bind(hits[:10], value=hits[0].value, detail=hits[0].detail or hits[0].text or hits[0].name, tool=hits[0].tool)


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
            return bind(cited, name=name, values=" vs ".join(sorted(by_value)), sources=len(sources))
    return None


def _version_number(value: str) -> float | None:
    """A number ('0.05') as itself, a dotted version ('10.2.89', '1.3.4') as its major.minor."""
    try:
        return float(value)
    except ValueError:
        pass
    major_minor = _version(value, 2) or _version(value, 1)
    return float(".".join(map(str, major_minor))) if major_minor else None


def _version(value: Any, parts: int) -> tuple[int, ...] | None:
    head = str(value).strip().split("+")[0].split()[0] if str(value).strip() else ""
    nums = []
    for piece in head.split(".")[:parts]:
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            return None
        nums.append(int(digits))
    return tuple(nums) if len(nums) == parts else None


@predicate(binds=("low", "high", "low_tool", "high_tool"), kinds=("system_fact",))
def system_version_below(ctx: Context, fact: str, than: str, parts: int = 1) -> Binding | None:
    """A version fact (e.g. the CUDA version the driver supports, nvidia-smi's header) is below another (e.g. the
    CUDA torch was built with), compared on its first ``parts`` numbers."""
    lows = [(v, f) for f in ctx.of("system_fact") if f.name == fact and (v := _version(f.value, parts)) is not None]
    highs = [(v, f) for f in ctx.of("system_fact") if f.name == than and (v := _version(f.value, parts)) is not None]
    if not lows or not highs:
        return None
    low, high = min(lows, key=lambda x: x[0]), max(highs, key=lambda x: x[0])
    if low[0] >= high[0]:
        return None
    return bind([low[1], high[1]], low=low[1].value, high=high[1].value, low_tool=low[1].tool, high_tool=high[1].tool)


@predicate(binds=("format", "value", "field"), kinds=("config_setting",))
def config_setting(ctx: Context, field: str, equals: Any = None, at_least: float | None = None,
                   below: float | None = None) -> Binding | None:
    """A config sets ``field`` to a value that equals / is >= at_least / is < below."""
    hits = [c for c in ctx.of("config_setting") if getattr(c, field, None) is not None
            and _matches(getattr(c, field), equals, at_least, below)]
    if not hits:
        return None
    return bind(hits[:10], format=hits[0].format, value=getattr(hits[0], field), field=field)


@predicate(binds=("format", "world", "started", "missing"), kinds=("config_setting",))
def config_ranks_never_started(ctx: Context) -> Binding | None:
    """A single-node config or command (no rendezvous address) that starts fewer ranks than its world size, or
    ranks with a gap or beyond it: the ranks it never starts are waited for by every process group."""
    for c in ctx.of("config_setting"):
        if c.master_addr or (c.num_machines or 1) != 1 or not (c.num_processes or c.node_ranks):
            continue
        world = c.world_size or len(c.node_ranks)
        if not plausible_world(world):  # before walking range(world): a config may state any number
            continue
        started = sorted(set(c.node_ranks)) if c.node_ranks else list(range(c.num_processes or 0))
        missing = sorted(set(range(world)) - set(started))
        if missing:
            return bind([c], format=c.format, world=world, started=", ".join(map(str, started)),
                        missing=", ".join(map(str, missing[:8])))
    return None


def _contract(ctx: Context) -> list[tuple[str | None, dict[str, Any], list[Any]]]:
    """Per file: world size, local batch, accumulation and LR from its configs and launch specs."""
    out = []
    sources = set(by_source(ctx, "config_setting")) | set(by_source(ctx, "launch_spec"))
    configs, launches = by_source(ctx, "config_setting"), by_source(ctx, "launch_spec")
    for source in sorted(sources, key=str):
        got: dict[str, Any] = {}
        cited: list[Any] = []
        for c in configs.get(source, []):
            for key in ("local_batch", "accumulation", "lr"):
                if getattr(c, key) is not None:
                    got.setdefault(key, getattr(c, key))
            if c.world_size:
                got.setdefault("world", c.world_size)
            if c.num_processes:
                got.setdefault("world", c.num_processes * (c.num_machines or 1) if c.format == "lightning"
                               else c.num_processes)
            cited.append(c)
        for s in launches.get(source, []):
            n = s.processes
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
            return bind([*ca, *cb][:8], before=beff(a), after=beff(b), lr=a.get("lr") or b.get("lr") or "unchanged",
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
        if m.name in _TIMINGS:
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
            return bind(cited, name=name, low=lo, high=hi, spread=round((hi - lo) / scale, 4), across=across)
    return None


@predicate(binds=("name", "base", "scaled", "ratio", "world_size"), kinds=("metric_series",))
def metric_scales_with_world_size(ctx: Context, tolerance: float = 0.02) -> Binding | None:
    """A loss or metric at world size N is N times (or 1/N of) its value at world size 1, within ``tolerance``
    (relative): a sum over ranks where a mean was meant, or a mean divided once more by the world size."""
    groups: dict[str, dict[int, Any]] = defaultdict(dict)
    for m in ctx.of("metric_series"):
        if m.world_size and m.values and m.name not in _TIMINGS:
            groups[m.name].setdefault(m.world_size, m)
    for name, by_size in groups.items():
        one = by_size.get(1)
        if one is None or not one.values[-1]:
            continue
        for size, m in sorted(by_size.items()):
            ratio = m.values[-1] / one.values[-1]
            if size > 1 and (abs(ratio - size) <= tolerance * size or abs(ratio * size - 1) <= tolerance):
                return bind([one, m], name=name, base=one.values[-1], scaled=m.values[-1], ratio=round(ratio, 3),
                            world_size=size)
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
            return bind(cited[:4], step=f"epoch {key[0]} step {key[1]}" if key[0] is not None else f"step {key[1]}",
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
            return bind(cited, field=name, values=" vs ".join(sorted(by_value)),
                         formats=", ".join(sorted({c.format for c in cited})))
    return None


@predicate(binds=("fact", "call", "guard", "line"), kinds=("code_fact",))
def code_fact(ctx: Context, facts: Sequence[str]) -> Binding | None:
    """A pasted training script shows one of the ``facts`` (``rules/artifacts/code_facts.yaml``)."""
    hits = [f for f in ctx.of("code_fact") if f.fact in facts]
    if not hits:
        return None
    first = hits[0]
    return bind(hits[:5], fact=first.fact, call=first.call, guard=first.guard or "",
                line=first.provenance.line if first.provenance else "?")
