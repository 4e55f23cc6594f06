"""Decide whether every `builtins.getattr` a pickle uses only names a nested class or enum member.

Protocol 2 pickles a nested class as `getattr(Owner, "Inner")` (ShardedTensor's
`ProcessGroupState`), and Python 3.12+ pickles enum members as
`getattr(Enum, "MEMBER")`. Those uses are harmless when the owner is an
allow-listed global and the name starts with a capital letter. Any other use of
getattr (a dunder, a method, a computed owner, getattr passed on as a value)
keeps it suspicious. The audit re-reads the stream inertly, counting every time
getattr is put on the stack and every harmless direct call of it.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, BinaryIO

from diagnose.probes.checkpoint.patterns import pattern
from diagnose.probes.checkpoint.pickle_globals import is_harmless
from diagnose.probes.checkpoint.pickle_inspect import (
    DEFAULT_LIMITS,
    GlobalRef,
    Limits,
    _BoundedReader,
    _InertUnpickler,
)

GETATTR = "builtins.getattr"


class _GetattrAudit(_InertUnpickler):
    """The inert unpickler, counting getattr pushes and harmless getattr calls."""

    dispatch = dict(_InertUnpickler.dispatch)

    def __init__(self, reader: Any, limits: Limits) -> None:
        super().__init__(reader, limits)
        self.pushes = 0
        self.harmless_calls = 0

    @staticmethod
    def _is_getattr(value: Any) -> bool:
        return isinstance(value, GlobalRef) and value.qualname == GETATTR

    def find_class(self, module: str, name: str) -> GlobalRef:  # noqa: D102
        ref = super().find_class(module, name)
        self.pushes += self._is_getattr(ref)
        return ref

    def _call(self, func: Any, args: Any) -> None:
        if self._is_getattr(func) and isinstance(args, tuple) and len(args) == 2:
            owner, name = args
            if isinstance(owner, GlobalRef) and is_harmless(owner.qualname) \
                    and isinstance(name, str) and pattern("nested_class_name").match(name):
                self.harmless_calls += 1
        super()._call(func, args)

    def _copied(self) -> None:
        """After an opcode that copies a stack or memo value onto the stack."""
        self.pushes += bool(self.stack) and self._is_getattr(self.stack[-1])

    def load_get(self) -> None:
        super().load_get()
        self._copied()

    def load_binget(self) -> None:
        super().load_binget()
        self._copied()

    def load_long_binget(self) -> None:
        super().load_long_binget()
        self._copied()

    def load_dup(self) -> None:
        super().load_dup()
        self._copied()

    dispatch[pickle.GET[0]] = load_get
    dispatch[pickle.BINGET[0]] = load_binget
    dispatch[pickle.LONG_BINGET[0]] = load_long_binget
    dispatch[pickle.DUP[0]] = load_dup


def getattr_is_harmless(raw: BinaryIO | bytes, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether every use of getattr in the pickle at `raw` is `getattr(AllowListedGlobal, "Capitalised")`."""
    reader = io.BytesIO(raw) if isinstance(raw, bytes) else _BoundedReader(raw, limits.max_bytes)
    audit = _GetattrAudit(reader, limits)
    try:
        audit.run()
    except (Exception, RecursionError):  # unreadable: keep getattr suspicious
        return False
    return audit.pushes > 0 and audit.pushes == audit.harmless_calls
