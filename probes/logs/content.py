"""Per-file content parsers: code that recognises a file by its content, fed from the log probe's one pass.

The log probe opens and reads every text file once. After its signature scan, it hands each
registered content parser a :class:`FileView` of that same read (no parser opens the file
again) and collects what the parsers return. A parser is any object with

- ``name: str``
- ``wants(view: FileView) -> bool`` (cheap: look at ``view.path``, ``view.head(n)``, ``view.signatures``)
- ``parse(view: FileView) -> ContentResult | Iterable[evidence]`` (evidence: models of
  ``diagnose.evidence`` or their dict records; picklable, since scan workers may be forked)

Parsers come from three places, in this order: the built-in list ``BUILTIN`` (import strings),
the ``diagnose.content_parsers`` entry-point group, and :func:`register_content_parser` (for
tests and site code; call it before the probe runs). A parser that raises is reported in a
note for that file and never ends the run.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

VIEW_BYTES = 8 << 20   # parsers see at most the first 8 MiB of a file (``complete`` says when that is all)
BUILTIN: tuple[str, ...] = (
    "diagnose.probes.steptime.content:StepTimeParser",
    "diagnose.probes.artifacts.content:ArtifactParser",
)
GROUP = "diagnose.content_parsers"


@dataclass(frozen=True)
class FileView:
    """What a content parser sees of one file: its path, its first bytes, and what the scan found."""

    path: str
    data: bytes                     # the first VIEW_BYTES bytes (decompressed), or the whole file
    complete: bool                  # ``data`` is the whole content
    size: int                       # bytes of content read in all (decompressed)
    signatures: frozenset[str]      # every log signature that hit a line of this file
    rank: int | None = None         # rank named by the path (rank3.log, rank-3/), if any

    def head(self, n: int = 4096) -> bytes:
        """The first ``n`` bytes (for a cheap ``wants``)."""
        return self.data[:n]

    @cached_property
    def text(self) -> str:
        """``data`` decoded as UTF-8 (invalid bytes replaced)."""
        return self.data.decode("utf-8", "replace")


@dataclass
class ContentResult:
    """Evidence and notes one parser got from one file."""

    evidence: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class ContentParser(Protocol):
    name: str

    def wants(self, view: FileView) -> bool: ...

    def parse(self, view: FileView) -> ContentResult | Iterable[Any]: ...


_REGISTERED: list[Any] = []
_LOADED: list[Any] | None = None
_ERRORS: list[str] = []


def register_content_parser(parser: Any) -> None:
    """Add a parser (an instance with name, wants, parse); a second one of the same name replaces it."""
    _check(parser)
    _REGISTERED[:] = [p for p in _REGISTERED if p.name != parser.name] + [parser]


def unregister_content_parser(name: str) -> None:
    """Remove a parser added with :func:`register_content_parser`."""
    _REGISTERED[:] = [p for p in _REGISTERED if p.name != name]


def content_parsers() -> list[Any]:
    """Every parser: built-in, entry points, registered (later ones of the same name win)."""
    global _LOADED
    if _LOADED is None:
        _LOADED = []
        for spec in BUILTIN:
            _load(spec, _LOADED)

        for ep in entry_points(group=GROUP):
            _load(ep.value, _LOADED)
    by_name = {p.name: p for p in [*_LOADED, *_REGISTERED]}
    return list(by_name.values())


def loading_errors() -> list[str]:
    """Parsers that could not be loaded, and why."""
    content_parsers()
    return list(_ERRORS)


def run_parsers(view: FileView, parsers: Iterable[Any]) -> ContentResult:
    """Every parser that wants ``view``, its evidence and notes gathered; a parser error is a note."""
    out = ContentResult()
    for parser in parsers:
        try:
            if not parser.wants(view):
                continue
            got = parser.parse(view)
            if isinstance(got, ContentResult):
                out.evidence.extend(got.evidence)
                out.notes.extend(got.notes)
            elif got is not None:
                out.evidence.extend(got)
        except Exception as exc:  # noqa: BLE001 - a parser's bug is a note, never the end of the run
            out.notes.append(f"{view.path}: content parser {parser.name!r} failed: {type(exc).__name__}: "
                             f"{str(exc)[:160]}")
    return out


def _load(spec: str, into: list[Any]) -> None:
    module, _, attr = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(module), attr)
        parser = obj() if isinstance(obj, type) else obj
        _check(parser)
    except Exception as exc:  # noqa: BLE001 - a broken plug-in is reported, not fatal
        _ERRORS.append(f"content parser {spec}: {type(exc).__name__}: {exc}")
        return
    into.append(parser)


def _check(parser: Any) -> None:
    if not isinstance(getattr(parser, "name", None), str) or not parser.name:
        raise TypeError(f"content parser {parser!r} has no name")
    if not callable(getattr(parser, "wants", None)) or not callable(getattr(parser, "parse", None)):
        raise TypeError(f"content parser {parser.name!r} needs wants() and parse()")
