"""Predicates that compare one field's values across log lines: between processes, at one counter value, or
from one line to the next (post-mortem evidence)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, predicate, ranks_of

USES_SIGNATURES = frozenset({"python_exception*"})


def _as_strs(value: Any) -> set[str]:
    return {str(v) for v in value} if isinstance(value, list) else {str(value)}


@predicate(binds=("values",), kinds=("log_line",))
def values_differ(ctx: Context, signature: str, field: str, where: dict[str, Any] | None = None,
                  per_process: bool = False) -> Binding | None:
    """A field of one signature takes different values across ranks or files (e.g. versions), among the
    lines whose other fields equal ``where`` (e.g. only MASTER_PORT assignments). Lines are compared within one
    value of each ``where`` field: MASTER_ADDR=a against MASTER_ADDR=b, never MASTER_ADDR against MASTER_PORT.
    ``per_process``: only the last line of each (file, rank) counts, so that one script or one pasted report
    that sets a value twice (a later assignment, two runs tried one after the other) is not two processes that
    disagree."""
    keys = sorted(where or {})
    groups: dict[tuple[str, ...], list[Any]] = defaultdict(list)
    for line in ctx.lines(signature):
        if all(str(line.fields.get(k)) in _as_strs(where[k]) for k in keys):
            groups[tuple(str(line.fields.get(k)) for k in keys)].append(line)
    for lines in groups.values():
        if per_process:
            last = {(ln.provenance.source, ln.rank): ln for ln in sorted(lines, key=lambda ln: ln.provenance.line or 0)}
            lines = list(last.values())
        values = {str(line.fields.get(field)) for line in lines if line.fields.get(field) is not None}
        if len(values) >= 2:
            return Binding(ranks_of(lines), tuple(lines[:20]), {"values": ", ".join(sorted(values))})
    return None


@predicate(binds=("before", "after", "expected"), kinds=("log_line",))
def next_value_differs(ctx: Context, first: str, then: str, field: str = "step", offset: int = 1) -> Binding | None:
    """A line of ``then`` whose ``field`` is not ``offset`` more than the ``field`` of the nearest line of ``first``
    before it, in the same file and rank with no other ``then`` line between (e.g. the step training starts at
    after a checkpoint load is not the loaded step + 1). A ``first`` line without the field pairs with nothing."""
    groups: dict[tuple[Any, Any], list[tuple[int, int, Any]]] = {}
    for order, name in enumerate((first, then)):
        for line in ctx.lines(name):
            key = (line.provenance.source, line.rank)
            groups.setdefault(key, []).append((line.provenance.line or 0, order, line))
    for items in groups.values():
        pending = None
        for _, order, line in sorted(items, key=lambda t: (t[0], t[1])):
            if order == 0:
                pending = line
                continue
            earlier, pending = pending, None
            before, after = (earlier.fields.get(field) if earlier else None), line.fields.get(field)
            if isinstance(before, int) and isinstance(after, int) and after != before + offset:
                return Binding(ranks_of([line]), (earlier, line),
                               {"before": before, "after": after, "expected": before + offset})
    return None


@predicate(binds=("at", "values", "odd"), kinds=("log_line",))
def values_differ_at_counter(ctx: Context, signature: str, fields: Sequence[str], counter: str,
                             by: Sequence[str], group_by: Sequence[str] = ()) -> Binding | None:
    """Processes (told apart by the fields ``by``, else their rank, else their file) that logged different ``fields``
    at the same value of a per-process ``counter`` (e.g. the ops of one communicator size at one operation count):
    the processes whose values differ from the most common ones are the odd ones (none on a tie). A process that
    logged a counter value twice in one ``group_by`` stream is left out of that stream: its counter does not
    advance with every line, so which of its lines pairs with which of another's is unknown."""
    streams: dict[tuple[Any, ...], dict[Any, dict[str, list[Any]]]] = {}
    for line in ctx.lines(signature):
        f = line.fields
        if f.get(counter) is None:
            continue
        who = tuple(f.get(k) for k in by)
        if all(v is None for v in who):
            who = (line.rank,) if line.rank is not None else (line.provenance.source,)
        stream = tuple(f.get(k) for k in group_by)
        streams.setdefault(stream, {}).setdefault(who, {}).setdefault(str(f[counter]), []).append(line)
    for stream, members in streams.items():
        steady = {who: at for who, at in members.items() if all(len(v) == 1 for v in at.values())}
        found = _odd_at_counter(steady, fields)
        if found is not None:
            at, odd, cited, values = found
            label = ", ".join(f"{k} {v}" for k, v in (*zip(group_by, stream, strict=True), (counter, at)))
            return Binding(ranks_of(odd), tuple(cited[:20]), {
                "at": label, "values": values, "odd": "; ".join(_who(line, by) for line in odd)})
    return None


def _odd_at_counter(members: dict[Any, dict[str, list[Any]]],
                    fields: Sequence[str]) -> tuple[str, list[Any], list[Any], str] | None:
    """The first counter value at which two or more members logged different ``fields``."""
    at_counter: dict[str, list[Any]] = {}
    for at in members.values():
        for value, (line,) in at.items():
            at_counter.setdefault(value, []).append(line)
    for value, lines in sorted(at_counter.items(), key=lambda kv: min(x.provenance.line or 0 for x in kv[1])):
        if len(lines) < 2:
            continue
        by_value: dict[tuple[str, ...], list[Any]] = {}
        for line in lines:
            by_value.setdefault(tuple(str(line.fields.get(k)) for k in fields), []).append(line)
        if len(by_value) < 2:
            continue
        sizes = sorted((len(v) for v in by_value.values()), reverse=True)
        common = max(by_value.values(), key=len) if sizes[0] > sizes[1] else []
        odd = [line for v in by_value.values() if v is not common for line in v] if common else []
        values = " vs ".join(" ".join(f"{f} {x}" for f, x in zip(fields, k, strict=True)) + f" ({len(v)} of {len(lines)})"
                             for k, v in by_value.items())
        return value, odd, lines, values
    return None


def _who(line: Any, by: Sequence[str]) -> str:
    named = [f"{k} {line.fields[k]}" for k in by if line.fields.get(k) is not None]
    if line.rank is not None:
        named.insert(0, f"rank {line.rank}")
    return " ".join(named) or str(line.provenance.source)


def _last_by(items: Iterable[Any], key: Callable[[Any], Any]) -> dict[Any, Any]:
    """The last item (by line) of each ``key``."""
    last: dict[Any, Any] = {}
    for item in items:
        k = key(item)
        if k not in last or (item.provenance.line or 0) >= (last[k].provenance.line or 0):
            last[k] = item
    return last


def _last_per_run(ctx: Context, keep: Callable[[Any], bool] = lambda m: True) -> list[Any]:
    """The last step metric (by line) of each run and rank, among those ``keep`` accepts."""
    kept = (m for m in ctx.of("step_metric") if keep(m))
    return list(_last_by(kept, lambda m: (m.run or m.provenance.source, m.rank)).values())


@predicate(binds=("step", "total", "short"), kinds=("step_metric",))
def progress_stops_before_total(ctx: Context, within: int = 2, least_total: int = 20) -> Binding | None:
    """A run's progress (a tqdm bar or a 'step N/M' counter) ends at most ``within`` steps short of its own total,
    with nothing later from that run: the last batches of the epoch never completed (the total is at least
    ``least_total``, so a short bar's ordinary stop is not read)."""
    for m in _last_per_run(ctx):
        total, step = m.steps_per_epoch, m.step
        if total and step is not None and total >= least_total and total - within <= step < total:
            return Binding(ranks_of([m]), (m,), {"step": step, "total": total, "short": total - step})
    return None


@predicate(binds=("epoch", "fraction"), kinds=("step_metric",))
def progress_ends_near_epoch_end(ctx: Context, at_least: float = 0.9) -> Binding | None:
    """A run's last step logged with a fractional epoch (the HF Trainer's 'epoch': 0.96) has a fraction of at least
    ``at_least``: nothing was logged after the last batches of an epoch."""
    for m in _last_per_run(ctx, lambda m: m.epoch_progress is not None):
        fraction = round(m.epoch_progress - int(m.epoch_progress), 4)
        if at_least <= fraction < 1.0:
            return Binding(ranks_of([m]), (m,), {"epoch": m.epoch_progress, "fraction": fraction})
    return None


@predicate(binds=("stage",), kinds=("log_line", "step_metric"))
def stalled_at(ctx: Context, names: Sequence[str], unless_after: Sequence[str] = (),
               ignore_types: Sequence[str] = ()) -> Binding | None:
    """A file's last line of ``names`` (a stage such as building a native extension or reading a checkpoint) has no
    line of ``unless_after`` (the stage's end or failure), no exception (other than of ``ignore_types``, e.g. the
    launcher's ChildFailedError) and no training step after it in that file: the process stopped there."""
    raised = [line for line in ctx.lines("python_exception*")
              if str(line.fields.get("exc_type") or "").rsplit(".", 1)[-1] not in ignore_types]
    later = [*(line for name in unless_after for line in ctx.lines(name)), *raised, *ctx.of("step_metric")]
    for name in names:
        for src, line in _last_by(ctx.lines(name), lambda line: line.provenance.source).items():
            if not any(x.provenance.source == src and (x.provenance.line or 0) > (line.provenance.line or 0)
                       for x in later):
                return Binding(ranks_of([line]), (line,), {"stage": line.text.strip()[:160]})
    return None


@predicate(binds=("step", "loss", "copies"), kinds=("log_line", "step_metric"))
def same_step_same_loss(ctx: Context, names: Sequence[str] = ()) -> Binding | None:
    """One file prints the same step (epoch and index) two or more times, every copy with the same loss: several
    processes logged it and each computed exactly the same value, which only the same samples on every rank give
    (a sharded loader gives each rank other samples, so other losses). Step metrics and the lines of ``names``
    (evaluation progress lines) are read; a loss printed with fewer than four significant digits is too coarse."""
    copies: dict[tuple[Any, ...], list[tuple[Any, float]]] = defaultdict(list)
    for item in [*ctx.of("step_metric"), *(line for name in names for line in ctx.lines(name))]:
        fields = getattr(item, "fields", None) or {}
        step = fields.get("step", getattr(item, "step", None))
        loss = fields.get("loss", getattr(item, "loss", None))
        if step is None or loss is None or len(str(loss).replace(".", "").strip("0")) < 4:
            continue
        epoch = fields.get("epoch", getattr(item, "epoch", None))
        copies[(item.provenance.source, getattr(item, "signature", None), epoch, step)].append((item, float(loss)))
    for (_src, _name, _epoch, step), pairs in copies.items():
        losses = {loss for _, loss in pairs}
        if len(pairs) >= 2 and len(losses) == 1:
            items = [item for item, _ in pairs]
            return Binding(ranks_of(items), tuple(items[:8]),
                           {"step": step, "loss": f"{losses.pop():g}", "copies": len(items)})
    return None
