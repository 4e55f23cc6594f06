"""Sizes as messages print them ("216.00 MiB", "7.92 GiB", "512 bytes") and as Slurm requests write them ("4G",
"4000"): one parser each for the engine and the hook."""

from __future__ import annotations

from typing import Any

__all__ = ["UNITS", "SLURM_MIB", "size_bytes", "parse_size", "slurm_mib"]

UNITS = {"B": 1, "BYTES": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
         "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def size_bytes(number: str, unit: str) -> float | None:
    """Bytes of ``number`` ``unit`` (unit in any case), or None when either cannot be read."""
    factor = UNITS.get(unit.strip().upper())
    try:
        return float(number) * factor if factor is not None else None
    except ValueError:
        return None


def parse_size(text: Any) -> float | None:
    """Bytes of a "216.00 MiB" string, or None."""
    number, _, unit = str(text or "").strip().partition(" ")
    return size_bytes(number, unit)


SLURM_MIB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}  # sbatch --mem: megabytes unless K/M/G/T follows


def slurm_mib(value: str | None) -> float | None:
    """MiB of a Slurm memory request as written ("4G", "4000", "512M"); None for 0 (all of the node's memory)
    or what does not parse."""
    text = str(value or "").strip().upper().rstrip("B")
    unit = text[-1:] if text[-1:] in SLURM_MIB else "M"
    number = text[:-1] if text[-1:] in SLURM_MIB else text
    try:
        mib = float(number) * SLURM_MIB[unit]
    except ValueError:
        return None
    return mib or None
