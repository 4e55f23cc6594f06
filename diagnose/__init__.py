"""diagnose: rule-based diagnostics for distributed PyTorch training.

Importing this package loads only the standard library, so the in-process hook
works in any training environment; the engine loads on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["__version__", "install", "record", "watch", "step", "diagnose"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("install", "record", "watch", "step"):
        from diagnose.hook import api  # start-up: importing the package loads only the standard library

        return getattr(api, name)
    if name == "diagnose":
        # start-up: importing the package loads only the standard library
        from diagnose.engine import diagnose_evidence

        return diagnose_evidence
    raise AttributeError(f"module 'diagnose' has no attribute {name!r}")
