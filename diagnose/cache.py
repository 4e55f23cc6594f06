"""What one run builds and the next can reuse, kept under the user's cache folder: compiled Hyperscan
databases, the validated signature catalog and parsed YAML, each keyed by a digest of what built it.

A missing, stale, unreadable or corrupt entry is rebuilt; a folder that cannot be written only costs the
rebuild next time. Entries are written to a temporary name and renamed, so concurrent runs never read a
half-written one. Nothing here is pickled: databases are Hyperscan's own serialisation, the rest JSON."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

try:  # without it nothing is compiled, so nothing is cached
    import hyperscan  # type: ignore[import-untyped]  # optional dependency
except ImportError:  # pragma: no cover - exercised where the wheel is missing
    hyperscan = None

HS_VERSION = getattr(hyperscan, "__version__", "x")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/diagnose`` (default ``~/.cache/diagnose``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diagnose"


def digest(parts: Iterable[bytes | str]) -> str:
    """A short stable digest of ``parts`` (each one delimited, so ``ab|c`` differs from ``a|bc``)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:20]


def _store(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        pass


def hyperscan_database(name: str, build: Callable[[], Any], mode: int | None = None) -> Any:
    """The database stored as ``name`` (with scratch space), else ``build()``'s, stored for next time;
    ``mode`` is the one ``build`` compiles in (block mode unless said)."""
    path = cache_dir() / f"{name}-{HS_VERSION}.hsdb"
    try:
        db = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK if mode is None else mode)
        db.scratch = hyperscan.Scratch(db)  # a loaded database comes without scratch space
        return db
    except Exception:  # noqa: BLE001 - a missing or stale cache is rebuilt
        pass
    db = build()
    _store(path, hyperscan.dumpb(db))
    return db


def read_json(name: str) -> Any | None:
    """The JSON stored as ``name``, or None when there is none (or it cannot be read)."""
    try:
        return json.loads((cache_dir() / name).read_bytes())
    except (OSError, ValueError):
        return None


def write_json(name: str, value: Any) -> None:
    """Store ``value`` as ``name`` for the next run (silently skipped where the folder is read-only)."""
    _store(cache_dir() / name, json.dumps(value, separators=(",", ":")).encode())
