"""Which globals a checkpoint pickle may name harmlessly, and which are plainly dangerous.

The lists are data (`rules/tables/pickle_globals.yaml`): harmless globals by their exact
fully-qualified name, never by module or pattern, since an attribute of an allowed module can be
a module alias or a re-exported callable. A global outside the harmless set is suspicious: loading
the file would import it and possibly call it. The dangerous ones run commands, evaluate code,
import or touch files, so the report can put them first.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from diagnose.yamlload import builtin_rules_dir


@dataclass(frozen=True)
class GlobalPolicy:
    harmless: frozenset[str]
    dangerous_modules: frozenset[str]
    dangerous_names: frozenset[str]
    dangerous_leaf_names: frozenset[str]

    def is_harmless(self, qualname: str) -> bool:
        return qualname in self.harmless

    def is_dangerous(self, qualname: str) -> bool:
        if qualname in self.dangerous_names:
            return True
        parts = qualname.split(".")
        if parts[-1] in self.dangerous_leaf_names:
            return True
        return any(".".join(parts[:i]) in self.dangerous_modules for i in range(1, len(parts)))


def policy_path() -> Path:
    return builtin_rules_dir() / "tables" / "pickle_globals.yaml"


def load_policy(path: Path | None = None) -> GlobalPolicy:
    """Read and check the table: its examples must classify as they say."""
    data = yaml.safe_load((path or policy_path()).read_text(encoding="utf-8"))
    policy = GlobalPolicy(*(frozenset(str(x) for x in data[key]) for key in
                            ("harmless", "dangerous_modules", "dangerous_names", "dangerous_leaf_names")))
    overlap = sorted(g for g in policy.harmless if policy.is_dangerous(g))
    if overlap:
        raise ValueError(f"{path or policy_path()}: harmless globals that are also dangerous: {overlap}")
    ex = data.get("examples", {})
    wrong = [g for g in ex.get("harmless", ()) if not policy.is_harmless(g)]
    wrong += [g for g in ex.get("suspicious", ()) if policy.is_harmless(g) or policy.is_dangerous(g)]
    wrong += [g for g in ex.get("dangerous", ()) if not policy.is_dangerous(g)]
    if wrong:
        raise ValueError(f"{path or policy_path()}: examples classified otherwise than they say: {wrong}")
    return policy


@lru_cache(maxsize=1)
def _policy() -> GlobalPolicy:
    return load_policy()


def is_harmless(qualname: str) -> bool:
    """Whether loading this global is known to run no user or system code."""
    return _policy().is_harmless(qualname)


def is_dangerous(qualname: str) -> bool:
    """Whether this global runs commands, evaluates code, imports, or touches files."""
    return _policy().is_dangerous(qualname)
