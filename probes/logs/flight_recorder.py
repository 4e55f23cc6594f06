"""PyTorch flight-recorder dumps (pickle or JSON, any backend) -> per-rank collective positions.

Pickles are read with the inert unpickler of `pickle_inspect`: nothing they name is
imported or called. Each dump becomes one ProcessGroup record per group and, per
group, a CollectiveState with the last enqueued / completed sequence numbers and the
first collective that had not completed (op, size), so ranks can be compared.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from diagnose.evidence import CollectiveState, ProcessGroup, Provenance
from diagnose.probes.checkpoint.pickle_inspect import PickleInspectError, inspect_pickle
from diagnose.probes.checkpoint.pickle_tree import to_skeleton
from diagnose.probes.files import Skip
from diagnose.yamlload import pattern_table

MAX_DUMP_BYTES = 64 << 20   # real dumps are a few MiB (2,000 entries by default)
_STATES = {"scheduled": "scheduled", "started": "started", "completed": "completed"}


def looks_like_dump_head(head: bytes) -> bool:
    """A pickle or JSON head (first 64 KiB or more) that mentions the flight recorder's keys."""
    head = head[:65552]
    if head[:1] == b"\x80":
        return b"pg_config" in head or (b"entries" in head and b"collective_seq_id" in head)
    if head.lstrip()[:1] == b"{":
        return b'"entries"' in head and (b'"pg_config"' in head or b'"collective_seq_id"' in head)
    return False


def looks_like_dump(path: Path) -> bool:
    """A file whose head mentions the flight recorder's keys."""
    try:
        with path.open("rb") as fh:
            return looks_like_dump_head(fh.read(65552))
    except OSError:
        return False


def read_dump(path: Path) -> dict[str, Any] | Skip:
    """The dump as plain data, or why it could not be read (the size is checked before reading)."""
    try:
        with path.open("rb") as fh:
            if os.fstat(fh.fileno()).st_size > MAX_DUMP_BYTES:
                return Skip(str(path), f"flight-recorder dump larger than {MAX_DUMP_BYTES >> 20} MiB")
            data = fh.read(MAX_DUMP_BYTES + 1)
    except OSError as exc:
        return Skip(str(path), f"unreadable: {exc.strerror or exc}")
    return parse_dump(data, str(path))


def parse_dump(data: bytes, source: str) -> dict[str, Any] | Skip:
    """Decode a dump's bytes (pickle read inertly, or JSON) into plain data, or why not."""
    if len(data) > MAX_DUMP_BYTES:
        return Skip(source, f"flight-recorder dump larger than {MAX_DUMP_BYTES >> 20} MiB")
    try:
        if data[:1] == b"\x80":
            dump = to_skeleton(inspect_pickle(data).root)
        else:
            dump = json.loads(data.decode("utf-8", "replace"))
    except (PickleInspectError, ValueError, RecursionError, MemoryError, OverflowError, TypeError) as exc:
        return Skip(source, f"invalid flight-recorder dump: {str(exc)[:160]}")
    if not isinstance(dump, dict) or not isinstance(dump.get("entries", []), list):
        return Skip(source, "not a flight-recorder dump")
    return dump


def safe_dump_evidence(dump: dict[str, Any], source: str, rank: int | None) -> tuple[list[Any], list[str]]:
    """``dump_evidence``, with a malformed dump turned into a note instead of an exception."""
    try:
        return dump_evidence(dump, source, rank), []
    except Exception as exc:  # noqa: BLE001 - a malformed dump is skipped with a note, never ends the run
        return [], [f"{source}: malformed flight-recorder dump skipped ({type(exc).__name__}: {str(exc)[:120]})"]


def dump_evidence(dump: dict[str, Any], source: str, rank: int | None) -> list[Any]:
    """ProcessGroup and CollectiveState records of one rank's dump."""
    rank = _rank(dump, source, rank)
    prov = Provenance(probe="flight_recorder", source=source)
    out: list[Any] = []
    for pg_key, cfg in (dump.get("pg_config") or {}).items():
        members = _members(cfg.get("ranks") if isinstance(cfg, dict) else None)
        if members:
            out.append(ProcessGroup(id=str(pg_key), members=members, rank=rank, provenance=prov,
                                    text=f"pg {pg_key} ({cfg.get('desc', '')}): ranks {list(members)}"))
    by_pg: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in dump.get("entries") or []:
        if isinstance(entry, dict) and isinstance(entry.get("collective_seq_id"), int) and not entry.get("is_p2p"):
            by_pg[_pg_name(entry)].append(entry)
    for pg, entries in by_pg.items():
        out.append(_position(pg, entries, rank, prov, dump.get("version")))
    return out


def _position(pg: str, entries: list[dict[str, Any]], rank: int | None, prov: Provenance,
              version: Any) -> CollectiveState:
    entries.sort(key=lambda e: e["collective_seq_id"])
    last_enqueued = entries[-1]["collective_seq_id"]
    done = [e["collective_seq_id"] for e in entries if e.get("state") == "completed"]
    pending = [e for e in entries if e.get("state") != "completed"]
    if all(e.get("state") == "scheduled" for e in entries):
        focus = entries[-1]  # gloo records no progress (every entry "scheduled"): the last collective issued
    else:
        focus = pending[0] if pending else entries[-1]
    op = str(focus.get("profiling_name") or "").split(":", 1)[-1].split(" ")[0] or None
    sizes = focus.get("input_sizes")
    text = (f"flight recorder v{version}: pg {pg} #{focus['collective_seq_id']} {op} "
            f"{focus.get('state')} (last enqueued {last_enqueued}, last completed {max(done) if done else -1})")
    return CollectiveState(
        rank=rank, process_group=pg, op=op, seq=focus["collective_seq_id"],
        state=_STATES.get(str(focus.get("state")), "started"), last_enqueued=last_enqueued,
        last_completed=max(done) if done else -1, shape=json.dumps(sizes) if sizes else None,
        dtype=str(focus.get("input_dtypes")) if focus.get("input_dtypes") else None,
        time=(focus.get("time_created_ns") or 0) / 1e9 or None, text=text, provenance=prov)


def _pg_name(entry: dict[str, Any]) -> str:
    pg = entry.get("process_group")
    if isinstance(pg, (list, tuple)) and pg:
        return str(pg[0])
    return str(entry.get("pg_id", "0"))


def _members(value: Any) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value if isinstance(v, int))
    return tuple(int(v) for v in re.findall(r"\d+", str(value or "")))  # regex: the numbers of a shape


def _rank(dump: dict[str, Any], source: str, rank: int | None) -> int | None:
    if isinstance(dump.get("rank"), int):
        return dump["rank"]
    if rank is not None:
        return rank
    m = pattern_table("flight_recorder")["rank_in_name"].search(Path(source).name)
    return int(m.group(1)) if m else None
