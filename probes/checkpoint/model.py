"""The state a model definition expects: `MODULE:FACTORY` built on the meta device, keys, shapes, dtypes.

`MODULE` is an importable module (`mypkg.models`) or a Python file
(`path/to/model.py`); `FACTORY` names a callable in it (dotted for nested
attributes) that returns a `torch.nn.Module`, or a module instance itself.
Importing and calling it runs the user's own code, by design; the checkpoint is
still only inspected, never unpickled. torch is imported only here.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from diagnose.errors import ConfigError
from diagnose.probes.checkpoint.pickle_tree import TensorMeta


@dataclass
class ModelState:
    """What `model.state_dict()` holds for the built model, without any tensor data."""

    spec: str
    tensors: dict[str, TensorMeta]
    device: str
    notes: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _on_path(folder: str) -> Iterator[None]:
    """Put `folder` first on sys.path while importing (siblings of a model file import as usual)."""
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def _import(module: str) -> ModuleType:
    path = Path(module)
    if module.endswith(".py") or os.sep in module or "/" in module:
        if not path.is_file():
            raise ConfigError(f"--model: no such file: {module}")
        name = f"_diagnose_model_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"--model: cannot import {module} as Python")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        with _on_path(str(path.resolve().parent)):
            spec.loader.exec_module(mod)
        return mod
    with _on_path(os.getcwd()):
        return importlib.import_module(module)


def resolve(spec: str) -> Any:
    """The object `MODULE:FACTORY` names (importing MODULE runs its top-level code)."""
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"--model takes MODULE:FACTORY (e.g. mypkg.models:build_model), not {spec!r}")
    try:
        obj: Any = _import(module)
    except ConfigError:
        raise
    except Exception as exc:  # the user's module failed to import: say where
        raise ConfigError(f"--model: importing {module} failed: {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"--model: {module} has no attribute {attr!r}") from None
    return obj


def _dtype(value: Any) -> str:
    return str(value).removeprefix("torch.")


def _build(factory: Any, device: str | None) -> Any:
    import torch  # optional dependency: torch

    if isinstance(factory, torch.nn.Module):
        return factory
    if not callable(factory):
        raise ConfigError(f"--model: {factory!r} is neither callable nor a torch.nn.Module")
    if device is None:
        return factory()
    with torch.device(device):
        return factory()


def model_state(spec: str, factory: Callable[[], Any] | None = None) -> ModelState:
    """Build the model named by `spec` (on the meta device when it allows) and read its state_dict."""
    import torch  # optional dependency: torch

    target = resolve(spec) if factory is None else factory
    notes: list[str] = []
    device = "meta"
    try:
        model = _build(target, "meta")
    except ConfigError:
        raise
    except Exception as exc:  # some factories cannot build on meta (they load weights, call .item())
        notes.append(f"the model could not be built on the meta device ({type(exc).__name__}: "
                     f"{str(exc)[:120]}); built it on the default device instead")
        device = "default"
        try:
            model = _build(target, None)
        except ConfigError:
            raise
        except Exception as exc2:
            raise ConfigError(f"--model: {spec} failed: {type(exc2).__name__}: {exc2}"[:400]) from exc2
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"--model: {spec} returned a {type(model).__name__}, not a torch.nn.Module")
    tensors = {
        key: TensorMeta(tuple(value.shape), _dtype(value.dtype), parameter=isinstance(value, torch.nn.Parameter))
        for key, value in model.state_dict(keep_vars=True).items() if isinstance(value, torch.Tensor)
    }
    return ModelState(spec, tensors, device, notes)
