"""One error hierarchy; only the CLI prints errors and chooses exit codes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleLocation:
    """A place in a rule or signature file."""

    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


class DiagnoseError(Exception):
    """Base of every error diagnose raises on purpose."""


class RuleError(DiagnoseError):
    """A rule or signature file is invalid; carries where."""

    def __init__(self, message: str, source: RuleLocation, hint: str | None = None) -> None:
        self.source = source
        self.hint = hint
        super().__init__(message)

    def __str__(self) -> str:
        text = f"{self.source}: {self.args[0]}"
        return f"{text} (the fix is {self.hint})" if self.hint else text


class RuleSetError(DiagnoseError):
    """Several rule errors, collected before any run."""

    def __init__(self, errors: list[RuleError]) -> None:
        self.errors = errors
        super().__init__(f"{len(errors)} rule error(s):\n" + "\n".join(str(e) for e in errors))


class ProbeError(DiagnoseError):
    """A probe could not run at all (bad job id, no processes)."""


class ConfigError(DiagnoseError):
    """Bad usage: unknown symptom, missing path, conflicting options."""
