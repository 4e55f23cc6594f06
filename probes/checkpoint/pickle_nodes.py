"""The inert values the pickle reader builds instead of running anything: globals, objects, storages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, eq=False)
class GlobalRef:
    """A global the stream names (module.name); never imported."""

    module: str
    name: str

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False)
class Node:
    """The recorded result of calling or instantiating something the stream names."""

    func: Any
    args: tuple[Any, ...] = ()
    state: Any = None
    items: list[Any] = field(default_factory=list)
    entries: list[tuple[Any, Any]] = field(default_factory=list)

    @property
    def qualname(self) -> str:
        return self.func.qualname if isinstance(self.func, GlobalRef) else type(self.func).__name__

    # The unpickler fills containers through these methods (APPEND(S), ADDITEMS, SETITEM(S)).
    def append(self, value: Any) -> None:
        self.items.append(value)

    def extend(self, values: Any) -> None:
        self.items.extend(values)

    def add(self, value: Any) -> None:
        self.items.append(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.entries.append((key, value))


@dataclass(frozen=True, eq=False)
class StorageRef:
    """A persistent id: for torch, ('storage', storage_type, key, location, numel)."""

    pid: Any

    @property
    def parts(self) -> tuple[Any, ...]:
        return tuple(self.pid) if isinstance(self.pid, (tuple, list)) else (self.pid,)
