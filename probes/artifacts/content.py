"""The artifact families as one content parser of the log probe's single pass.

Shaped for the content-parser interface of ``probes/logs/content.py`` (branch scan-hostile: an object
with ``name``, ``wants(view)`` and ``parse(view)``, where a view carries ``path``, ``data`` and
``rank``): registering ``diagnose.probes.artifacts.content:ArtifactParser`` there replaces the
direct call to `diagnose.probes.artifacts.records` in the log probe.
"""

from __future__ import annotations

from typing import Any

from diagnose.probes.artifacts import records

__all__ = ["ArtifactParser"]


class ArtifactParser:
    """Launch commands, configs, system tool outputs and metric tables of one file."""

    name = "artifacts"

    def wants(self, view: Any) -> bool:
        """Every text file: the kind of artifact is read from the content, never from the name."""
        return b"\0" not in bytes(view.data[:4096])

    def parse(self, view: Any) -> list[dict[str, Any]]:
        """Evidence records of the file (notes on unreadable parts are kept in the records' absence)."""
        found, _ = records(view.path, view.data, getattr(view, "rank", None))
        return found
