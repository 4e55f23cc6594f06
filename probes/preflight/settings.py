"""Settings of one preflight run and the shape of a check: thresholds and texts from rules/, env lookups."""

from __future__ import annotations

import os
import socket
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from diagnose.evidence import HostCheck, Provenance, Scalar
from diagnose.yamlload import builtin_rules_dir

PROBE = "preflight"


@lru_cache(maxsize=1)
def config() -> dict[str, Any]:
    """The thresholds, variable names and fix texts of the checks."""
    return yaml.safe_load((builtin_rules_dir() / "signatures" / "preflight" / "checks.yaml").read_text())


@dataclass(frozen=True)
class Settings:
    """What the launch will use, from the options and the environment (with where each came from)."""

    env: Mapping[str, str] = field(repr=False)
    port: int | None = None
    master_addr: str | None = None
    nproc: int | None = None
    nnodes: int | None = None
    workers: int | None = None
    run_id: str | None = None
    sources: tuple[tuple[str, str], ...] = ()

    def source(self, name: str) -> str:
        return dict(self.sources).get(name, "unknown")


def first_env(env: Mapping[str, str], key: str) -> tuple[str | None, str | None]:
    for var in config()["env"][key]:
        if env.get(var, "").strip():
            return env[var].strip(), var
    return None, None


def _int(text: str | None) -> int | None:
    """An int, or the fixed size of a ``min:max`` range that is one number."""
    if text is None:
        return None
    lo, _, hi = text.partition(":")
    return int(lo) if lo.isdigit() and (not hi or hi == lo) else None


def settings(port: int | None = None, nproc: int | None = None, workers: int | None = None,
             env: Mapping[str, str] | None = None) -> Settings:
    """Resolve the launch settings: options first, then MASTER_PORT / --rdzv-endpoint (PET_*) variables."""
    env = dict(os.environ if env is None else env)
    sources: dict[str, str] = {}
    if port is not None:
        sources["port"] = "--port"
    else:
        text, var = first_env(env, "port")
        endpoint, evar = first_env(env, "rdzv_endpoint")
        if text is None and endpoint and endpoint.rpartition(":")[2].isdigit():
            text, var = endpoint.rpartition(":")[2], evar
        port = int(text) if text and text.isdigit() else None
        sources["port"] = var or "default"
        port = config()["defaults"]["port"] if port is None else port
    addr, avar = first_env(env, "master_addr")
    endpoint, _ = first_env(env, "rdzv_endpoint")
    if addr is None and endpoint:
        addr, avar = endpoint.rpartition(":")[0] or endpoint, "rdzv endpoint"
    if nproc is None:
        text, var = first_env(env, "nproc")
        nproc = _int(text)
        sources["nproc"] = var or "unknown"
    else:
        sources["nproc"] = "--nproc"
    text, var = first_env(env, "nnodes")
    sources["nnodes"] = var or "unknown"
    sources["master_addr"] = avar or "unset"
    return Settings(env=env, port=port, master_addr=addr, nproc=nproc, nnodes=_int(text), workers=workers,
                    run_id=first_env(env, "run_id")[0], sources=tuple(sources.items()))


def make_check(name: str, status: str, detail: str, value: Scalar | None = None, limit: Scalar | None = None,
               source: str | None = None, **fill: Any) -> HostCheck:
    """One check record; a failing one carries its fix from the data file, filled with the values."""
    fix = None
    if status == "fail":
        template = config()["fix"].get(name.removesuffix("_agree"), "")
        fix = " ".join(template.format_map(defaultdict(str, value=value, limit=limit, **fill)).split()) or None
    return HostCheck(name=name, status=status, value=value, limit=limit, detail=detail, fix=fix,  # type: ignore[arg-type]
                     text=f"{status.upper()} {name}: {detail}",
                     provenance=Provenance(probe=PROBE, source=source, host=socket.gethostname(), pid=os.getpid()))


# -- rendezvous port and leftovers -----------------------------------------------------------------
