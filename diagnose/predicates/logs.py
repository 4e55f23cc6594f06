"""Predicates over log lines, exits and collective states (post-mortem evidence)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from diagnose.context import Context
from diagnose.predicates.base import Binding, parse_rank_list, predicate, ranks_of
from diagnose.predicates.tables import table_list
from diagnose.probes.logs.signatures import load_signatures
from diagnose.ranks import SIGNAL_NAMES, format_ranks, plausible_world
from diagnose.units import parse_size

USES_SIGNATURES = frozenset({
    "python_exception*", "python_exception", "python_exception_repr", "python_exception_type_last",
    "python_exception_notebook",
    "hook_exception", "collective_fingerprint_mismatch", "launch_nproc_per_node", "cuda_visible_devices_setting",
    "ddp_member_banner", "store_clients_missing", "store_based_barrier_waiting", "oserror_no_such_file",
    "oserror_is_a_directory", "torch_oom_v1_reserved", "torch_oom_v2_capacity", "torch_oom_this_process_in_use",
})
@predicate(binds=("signature", "frames", "message", "seq", "op", "name", "module"), kinds=("log_line",))
def has_signature(ctx: Context, names: Sequence[str], where: dict[str, Any] | None = None,
                  frames_any: Sequence[str] = (), min_count: int = 1, latest: bool = False) -> Binding | None:
    """Log lines matched one of the named signatures (optionally with field values and traceback frames); the
    fields are the earliest line's, or with ``latest`` the last one's (a progress bar's furthest position)."""
    hits = []
    for name in names:
        for line in ctx.lines(name):
            if where and any(str(line.fields.get(k)) not in _as_strs(v) for k, v in where.items()):
                continue
            if frames_any and not _frames_match(line.fields.get("frames", ""), frames_any):
                continue
            hits.append(line)
    if len(hits) < min_count:
        return None
    hits.sort(key=lambda e: (e.time or 0, e.provenance.source or "", e.provenance.line or 0))
    first = hits[-1] if latest else hits[0]
    fields = {**first.fields, "signature": first.signature, "count": len(hits)}
    return Binding(ranks_of(hits), tuple(hits[-50:] if latest else hits[:50]), fields)


@predicate(binds=("total", "free", "own", "elsewhere", "signature"), kinds=("log_line",))
def oom_memory_elsewhere(ctx: Context, at_least: float) -> Binding | None:
    """A CUDA out-of-memory message whose own figures show that at least ``at_least`` of the device is held
    outside this process's allocator: total minus free minus what PyTorch reserved (torch 1.5-2.0) or what this
    process has in use (torch 2.1+)."""
    own_by_line = {(e.provenance.source, e.provenance.line): parse_size(e.fields.get("used"))
                   for e in ctx.lines("torch_oom_this_process_in_use")}
    for name in ("torch_oom_v1_reserved", "torch_oom_v2_capacity"):
        for e in ctx.lines(name):
            total, free = parse_size(e.fields.get("total")), parse_size(e.fields.get("free"))
            own = parse_size(e.fields.get("reserved")) if name == "torch_oom_v1_reserved" else \
                own_by_line.get((e.provenance.source, e.provenance.line))
            if not total or free is None or own is None:
                continue
            elsewhere = total - free - own
            if elsewhere >= at_least * total:
                return Binding(ranks_of([e]), (e,), {"total": e.fields["total"], "free": e.fields["free"],
                                                    "own": _human(own), "elsewhere": _human(elsewhere),
                                                    "signature": name, "count": 1})
    return None


def _human(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def _as_strs(value: Any) -> set[str]:
    return {str(v) for v in value} if isinstance(value, list) else {str(value)}


def _frames_match(frames: Any, wanted: Sequence[str]) -> bool:
    names = {f.lower() for f in str(frames).split(",")}
    return any(w.lower() in names or any(w.lower() in n for n in names) for w in wanted)


@predicate(binds=("exitcode", "signal"), kinds=("rank_exit",))
def rank_exited(ctx: Context, signals: Sequence[str] = (), exitcodes: Sequence[int] = (),
                without_error_file: bool = False, exclude_signals: Sequence[str] = (),
                unless_reported: Sequence[str] = (), only_reported: Sequence[str] = (),
                unless_raised: bool = False, raised_ignore_types: Sequence[str] = ()) -> Binding | None:
    """Ranks ended with one of the signals or exit codes (any non-zero when neither is given).

    ``unless_reported`` drops ranks that logged one of those signatures themselves (e.g. a rank
    whose own watchdog timed out and then aborted is a victim, not a culprit); ``only_reported``
    keeps only ranks that logged one of those (e.g. a checkpoint save). A line of ``only_reported``
    that names no rank counts for the one candidate rank when there is exactly one. ``unless_raised``
    drops ranks that raised a Python exception of their own first (a traceback on the dead rank is
    its cause, the signal only how it ended); exceptions of ``raised_ignore_types`` do not count. A line of
    ``unless_reported`` that names no rank counts for a lone SIGABRT exit (how the NCCL watchdog ends its process)."""
    reporters = {e.rank for name in unless_reported for e in ctx.lines(name) if e.rank is not None}
    if unless_raised:
        reporters |= set(raised_by_rank(ctx, raised_ignore_types))
    found = [ex for ex in ctx.of("rank_exit") if ex.rank not in reporters
             and _exit_matches(ex, signals, exitcodes, exclude_signals, without_error_file)]
    if len(found) == 1 and _signal(found[0]) == "SIGABRT" and any(
            e.rank is None for name in unless_reported for e in ctx.lines(name)):
        found = []  # a rankless report (a pasted watchdog timeout) and one SIGABRT: the watchdog's own abort
    cited: list[Any] = []
    if only_reported:
        lines = [e for name in only_reported for e in ctx.lines(name)]
        doing = {e.rank for e in lines if e.rank is not None}
        if len(found) == 1 and any(e.rank is None for e in lines):
            doing.add(found[0].rank)
        found = [ex for ex in found if ex.rank in doing]
        cited = [e for e in lines if e.rank in doing or e.rank is None][:5]
    if not found:
        return None
    first = found[0]
    sig = first.signal or SIGNAL_NAMES.get(-(first.exitcode or 0), "")
    return Binding(ranks_of(found), (*found, *cited), {"exitcode": first.exitcode, "signal": sig or "no signal"})


def _signal(ex: Any) -> str | None:
    return ex.signal or SIGNAL_NAMES.get(-(ex.exitcode or 0))


def _exit_matches(ex: Any, signals: Sequence[str], exitcodes: Sequence[int], exclude_signals: Sequence[str],
                  without_error_file: bool) -> bool:
    sig = _signal(ex)
    if exclude_signals and sig in exclude_signals:
        return False
    if signals or exitcodes:
        if sig not in signals and ex.exitcode not in exitcodes:
            return False
    elif not ex.exitcode and not ex.signal:
        return False
    return not (without_error_file and ex.error_file)


@predicate(binds=("signature",), kinds=("log_line",))
def culprits_named(ctx: Context, names: Sequence[str]) -> Binding | None:
    """Lines of the named signatures name culprit ranks in a ``culprits`` field."""
    ranks: set[int] = set()
    hits = []
    for name in names:
        for line in ctx.lines(name):
            found = parse_rank_list(line.fields.get("culprits", ""))
            if found:
                ranks |= found
                hits.append(line)
    if not ranks:
        return None
    return Binding(frozenset(ranks), tuple(hits[:20]), {"signature": hits[0].signature})


@predicate(binds=("pair",), kinds=("log_line",))
def mismatch_pair(ctx: Context) -> Binding | None:
    """A DETAIL fingerprint mismatch: the reporting rank's peer is the odd one out."""
    hits = ctx.lines("collective_fingerprint_mismatch")
    if not hits:
        return None
    counts: dict[int, int] = {}
    for h in hits:
        for key in ("rank_a", "rank_b"):
            if isinstance(h.fields.get(key), int):
                counts[h.fields[key]] = counts.get(h.fields[key], 0) + 1
    reporters = ranks_of(hits)
    others = {r for r in counts if r not in reporters} or set(counts)
    # A mismatch line that names no peer (only "Rank N is running inconsistent collective") names no culprit.
    culprits = frozenset({min(others, key=lambda r: (-counts[r], r))}) if others else frozenset()
    f = hits[0].fields
    pair = f"{f.get('op', '?')} on rank {f.get('rank_a', '?')} vs {f.get('op_b', '?')} on rank {f.get('rank_b', '?')}"
    return Binding(culprits, tuple(hits[:10]), {"pair": pair, "seq": f.get("seq")})


@predicate(binds=("symptom",), kinds=("reported_symptom",))
def reported_symptom(ctx: Context, symptoms: Sequence[str]) -> Binding | None:
    """The user said they saw one of these symptoms (--symptom)."""
    hits = [s for s in ctx.of("reported_symptom") if s.symptom in symptoms]
    if not hits:
        return None
    return Binding(frozenset(), tuple(hits), {"symptom": hits[0].symptom})


@predicate(binds=("symptom",), kinds=("reported_symptom", "inferred_symptom"))
def symptom_said(ctx: Context, symptoms: Sequence[str]) -> Binding | None:
    """The user saw one of these symptoms: told with --symptom, or named clearly by the report's own words (never
    a guess from the artifacts' kind or the wording table)."""
    hits = [s for s in ctx.of("reported_symptom") if not s.inferred and s.symptom in symptoms]
    hits += [s for s in ctx.of("inferred_symptom") if s.said and s.symptom in symptoms]
    if not hits:
        return None
    return Binding(frozenset(), tuple(hits[:1]), {"symptom": hits[0].symptom})


@predicate(binds=("expected", "seen", "missing"), kinds=("log_line", "rank_status"))
def ranks_never_arrived(ctx: Context) -> Binding | None:
    """Fewer ranks showed up than the world size says (banners, store client counts, rank status)."""
    expected, seen, cited = ctx.world_size_hint(), set(ctx.ranks_seen()), []
    for line in [*ctx.lines("store_clients_missing"), *ctx.lines("store_based_barrier_waiting")]:
        if int(line.fields.get("joined", 0)) < int(line.fields.get("expected", 0)) and plausible_world(
                int(line.fields["expected"])):  # a huge number in the text is a note (Context), never a range
            expected = max(expected or 0, int(line.fields["expected"]))
            cited.append(line)
    quiet = {"missing"} if ctx.group_initialized() else {"missing", "no_evidence"}
    missing = {s.rank for s in ctx.of("rank_status") if s.status in quiet and s.rank is not None}
    cited += [s for s in ctx.of("rank_status") if s.rank in missing]
    if expected and seen and not ctx.group_initialized():  # past init, every rank had arrived
        missing |= set(range(expected)) - seen
    if not missing and not cited:
        return None
    cited += ctx.lines("ddp_member_banner")[:8]
    return Binding(frozenset(missing), tuple(cited), {
        "expected": expected or "?", "seen": format_ranks(seen), "missing": format_ranks(missing) if missing else "?"})


@predicate(binds=("expected", "joined"), kinds=("log_line",))
def store_overfull(ctx: Context) -> Binding | None:
    """The store-based init barrier counted more workers than the world size: clients of another run share the
    store (a file:// init file left by an earlier run, or a second job on the same MASTER_ADDR:MASTER_PORT)."""
    for line in ctx.lines("store_based_barrier_waiting"):
        joined, expected = int(line.fields.get("joined", 0)), int(line.fields.get("expected", 0))
        if expected and joined > expected:
            return Binding(ranks_of([line]), (line,), {"expected": expected, "joined": joined})
    return None


@predicate(binds=("nproc", "devices"), kinds=("log_line",))
def more_processes_than_devices(ctx: Context) -> Binding | None:
    """The launcher starts more processes per node than GPUs are visible."""
    nproc = ctx.lines("launch_nproc_per_node")
    visible = ctx.lines("cuda_visible_devices_setting")
    if not nproc or not visible:
        return None
    n = int(nproc[0].fields.get("nproc", 0))
    devices = str(visible[0].fields.get("devices", ""))
    count = len([d for d in devices.split(",") if d])
    if n <= count:
        return None
    return Binding(frozenset(range(count, n)), (nproc[0], visible[0]), {"nproc": n, "devices": count})


@predicate(binds=("exc_type", "message", "where"), kinds=("log_line",))
def ranks_with_own_error(ctx: Context, ignore: Sequence[str] = (), ignore_types: Sequence[str] = (),
                         uncaught_only: bool = False, only_unexplained: bool = False, only_explained: bool = False,
                         include_unranked: bool = False, unranked_only: bool = False, types: Sequence[str] = (),
                         user_frames_only: Sequence[str] = (), library_frames: Sequence[str] = (),
                         types_from: str = "") -> Binding | None:
    """Ranks that raised an exception of their own (not one that only reports a peer's failure).

    Reads traceback lines from logs and the exceptions the in-process hook recorded. With
    ``only_unexplained``, an exception line that another signature also matched (an OOM, a
    collective mismatch, ...) is left to the rules of that signature; ``only_explained`` keeps only those
    (another rule names the cause). ``include_unranked`` also
    counts exceptions of a process whose rank is unknown (a single-process log, a pasted
    traceback); ``unranked_only`` counts only those. ``types`` keeps only those exception types;
    ``user_frames_only`` keeps only tracebacks whose innermost frame is in a file whose path holds
    none of these markers (framework and library install paths): the user's own code; ``library_frames``
    keeps only those whose innermost frame is in a file whose path holds one of these markers (a framework's
    own code). ``types_from`` names a list of rules/tables (``"<table>.<list>"``) that adds to ``types``."""
    if types_from:
        types = (*types, *table_list(types_from))
    ignored = {(e.provenance.source, e.provenance.line) for name in ignore for e in ctx.lines(name)
               if e.provenance.line is not None}
    hooked = [e for e in ctx.lines("hook_exception") if e.fields.get("uncaught") or not uncaught_only]
    lines = [*_exception_lines(ctx), *hooked]
    attributed = _attributed_rank(ctx) if include_unranked else None
    hits = [e for e in lines
            if _rank_wanted(e.rank, include_unranked or unranked_only, unranked_only)
            and (e.provenance.source, e.provenance.line) not in ignored
            and _exc_type(e).rsplit(".", 1)[-1] not in ignore_types
            and (not types or _exc_type(e).rsplit(".", 1)[-1] in types)
            and (not user_frames_only or _in_user_code(e, user_frames_only))
            and (not library_frames or raised_in(e, library_frames))
            and not (only_unexplained and _explaining(ctx, e) - _RESTATED)
            and not (only_explained and not _explaining(ctx, e) - _RESTATED)]
    if not hits:
        return None
    hits.sort(key=lambda e: (e.time or 0, e.provenance.source or "", e.provenance.line or 0))
    first = hits[0]
    where = first.fields.get("frame_path")
    where = f"{where}:{first.fields.get('frame_line', '?')}" if where else (first.provenance.source or "?")
    ranks = ranks_of(hits) | ({attributed} if attributed is not None and any(e.rank is None for e in hits) else set())
    return Binding(frozenset(ranks), tuple(hits[:10]),
                   {"exc_type": _exc_type(first) or "?", "message": str(first.fields.get("message", ""))[:160],
                    "where": where})


LAUNCHER_STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")  # how a launcher stops the ranks that did not fail


def _attributed_rank(ctx: Context) -> int | None:
    """The rank a traceback without a rank prefix belongs to: the one rank that ended on its own
    (not stopped by the launcher), when exactly one did."""
    failed = {ex.rank for ex in ctx.of("rank_exit") if ex.rank is not None
              and (ex.exitcode or ex.signal)
              and (ex.signal or SIGNAL_NAMES.get(-(ex.exitcode or 0))) not in LAUNCHER_STOP_SIGNALS}
    return next(iter(failed)) if len(failed) == 1 else None


def raised_by_rank(ctx: Context, ignore_types: Sequence[str] = ()) -> dict[int, Any]:
    """Each rank's first exception of its own (not one another signature explains, not of
    ``ignore_types``); a traceback without a rank counts for the one rank that failed by itself."""
    own = [e for e in [*_exception_lines(ctx), *ctx.lines("hook_exception")]
           if _exc_type(e).rsplit(".", 1)[-1] not in ignore_types and not _explaining(ctx, e)]
    own.sort(key=lambda e: (e.time or 0, e.provenance.source or "", e.provenance.line or 0))
    out: dict[int, Any] = {}
    for e in own:
        if e.rank is not None:
            out.setdefault(e.rank, e)
    attributed = _attributed_rank(ctx) if any(e.rank is None for e in own) else None
    if attributed is not None:
        out.setdefault(attributed, next(e for e in own if e.rank is None))
    return out


@predicate(binds=("exc_type", "message", "signal", "where"), kinds=("rank_exit", "log_line"))
def exited_after_raising(ctx: Context, signals: Sequence[str] = (), ignore_types: Sequence[str] = ()) -> Binding | None:
    """Ranks that raised a Python exception of their own and then ended on one of ``signals`` (e.g.
    SIGABRT when torch's threads are torn down after the exception); any signal when none is given."""
    raised = raised_by_rank(ctx, ignore_types)
    exits = [ex for ex in ctx.of("rank_exit") if ex.rank in raised
             and (sig := ex.signal or SIGNAL_NAMES.get(-(ex.exitcode or 0))) and (not signals or sig in signals)]
    if not exits:
        return None
    first = exits[0]
    line = raised[first.rank]
    where = line.fields.get("frame_path")
    return Binding(ranks_of(exits), (*(raised[ex.rank] for ex in exits), *exits), {
        "exc_type": _exc_type(line) or "?", "message": str(line.fields.get("message", ""))[:160],
        "signal": first.signal or SIGNAL_NAMES.get(-(first.exitcode or 0)),
        "where": f"{where}:{line.fields.get('frame_line', '?')}" if where else (line.provenance.source or "?")})


def _rank_wanted(rank: int | None, unranked: bool, unranked_only: bool) -> bool:
    if unranked_only:
        return rank is None
    return rank is not None or unranked


def _in_user_code(line: Any, markers: Sequence[str]) -> bool:
    path = str(line.fields.get("frame_path") or "")
    return bool(path) and not any(m in path for m in markers)


def raised_in(line: Any, markers: Sequence[str]) -> bool:
    """Whether an exception line's innermost frame (``frame_path``) lies under one of the path ``markers``."""
    path = str(line.fields.get("frame_path") or "").replace("\\", "/")
    return any(m in path for m in markers)


_EXCEPTION_LINES = "python_exception*"
_EXCEPTIONS = {"python_exception", "python_exception_repr", "python_exception_type_last", "python_exception_notebook",
               "hook_exception"}
# errno lines that only restate the exception (a path the user's code opened is not there): they leave the
# line to the user-code rules; on a checkpoint path oserror_on_checkpoint_path also matches and explains it.
_RESTATED = {"oserror_no_such_file", "oserror_is_a_directory"}


@lru_cache(maxsize=1)
def _context_names() -> frozenset[str]:
    """Catalog signatures marked ``context`` (banners, INFO lines, settings): they explain no error line."""
    return frozenset(s.name for s in load_signatures().signatures if s.context)


def _explaining(ctx: Context, line: Any) -> set[str]:
    """The signatures on an exception's line that say more than that an exception was raised."""
    return ctx.signatures_of(line) - _EXCEPTIONS - _context_names()


NOTEBOOK_HEADER = "python_exception_notebook"
NOTEBOOK_SPAN = 400  # lines from a notebook traceback's header to its final exception line


def _exception_lines(ctx: Context) -> list[Any]:
    """Printed exceptions, each once: a notebook traceback's header (``KeyError   Traceback ...``)
    counts only when its final ``KeyError: ...`` line is missing below it (a cut paste)."""
    lines = ctx.lines(_EXCEPTION_LINES)
    finals = [e for e in lines if e.signature != NOTEBOOK_HEADER]
    return [e for e in lines if e.signature != NOTEBOOK_HEADER or not any(
        f.provenance.source == e.provenance.source and _exc_type(f) == _exc_type(e)
        and 0 < (f.provenance.line or 0) - (e.provenance.line or 0) <= NOTEBOOK_SPAN for f in finals)]


def _exc_type(line: Any) -> str:
    return str(line.fields.get("exc_type") or line.fields.get("type") or "")

