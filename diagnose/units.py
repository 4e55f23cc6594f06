"""Sizes as messages print them ("216.00 MiB", "7.92 GiB", "512 bytes"): one parser for the engine and the hook."""

from __future__ import annotations

from typing import Any

__all__ = ["UNITS", "size_bytes", "parse_size"]

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
