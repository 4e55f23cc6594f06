"""Untrusted pickles: nothing they name is imported or called, whatever the bytes."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import pickletools
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.probes.checkpoint.pickle_inspect import (
    Limits,
    PickleInspectError,
    inspect_pickle,
    inspect_stream,
)
from diagnose.probes.checkpoint.probe import inspect_checkpoint


class _Planted:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


class _Exec:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, ("open('/tmp/never', 'w')",)


def test_planted_pickle_runs_nothing_and_is_named(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    model = torch.nn.Linear(2, 2)
    torch.save({"model": model.state_dict(), "step": 3, "extra": _Planted(marker)}, path)
    info = inspect_checkpoint(path)
    assert not marker.exists()
    assert info.suspicious_globals == ["posix.system"] and info.dangerous_globals == ["posix.system"]
    assert info.format == "torch.save" and "model" in info.present and "step" in info.present
    # The planted file is live: a real unpickle (in a child process) does run it.
    code = f"import torch; torch.load({str(path)!r}, weights_only=False)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, capture_output=True)
    assert marker.exists()


def test_plain_pickle_payloads_are_named(tmp_path: Path) -> None:
    import subprocess as sp

    payloads = {"exec": (_Exec(), "builtins.exec"),
                "popen": (_Reduce(sp.Popen, (["true"],)), "subprocess.Popen"),
                "eval": (_Reduce(eval, ("1",)), "builtins.eval")}
    for name, (obj, qualname) in payloads.items():
        for proto in (0, 2, 5):
            path = tmp_path / f"{name}{proto}.pkl"
            path.write_bytes(pickle.dumps({"model": {}, "x": obj}, protocol=proto))
            info = inspect_checkpoint(path)
            assert qualname in info.dangerous_globals, (name, proto, info)


class _Reduce:
    def __init__(self, func: object, args: tuple[object, ...]) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.func, self.args


def test_limits_give_clear_errors() -> None:
    with pytest.raises(PickleInspectError, match="opcodes"):
        inspect_pickle(pickle.dumps(list(range(200_000))), Limits(max_ops=70_000))
    huge_length = b"\x80\x04" + b"B" + (2**31).to_bytes(4, "little")
    with pytest.raises(PickleInspectError, match="byte limit"):  # a file is never read past the limit
        inspect_stream(io.BytesIO(huge_length + b"\0" * 64), Limits(max_bytes=1 << 20))
    with pytest.raises(PickleInspectError, match="truncated"):
        inspect_pickle(huge_length, Limits(max_bytes=1 << 20))
    with pytest.raises(PickleInspectError, match="truncated"):
        inspect_pickle(pickle.dumps({"a": 1})[:-1])


def test_cycles_and_deep_nesting_do_not_crash() -> None:
    loop: list[object] = []
    loop.append(loop)
    skel = inspect_pickle(pickle.dumps({"loop": loop}))
    assert skel.root["loop"] == ["<cycle>"]
    depth = 100_000
    deep = b"\x80\x04" + b"]" * depth + b"a" * (depth - 1) + b"."
    root = inspect_pickle(deep).root
    levels = 0
    while isinstance(root, list):
        root, levels = root[0], levels + 1
    assert root == "<nested too deep>" and 100 < levels < 200


def test_exponential_sharing_stays_linear() -> None:
    """a=[x,x]; b=[a,a]; ... shares subtrees: conversion is by identity, never expanded."""
    node: object = "x"
    for _ in range(60):
        node = [node, node]
    skel = inspect_pickle(pickle.dumps(node))
    assert isinstance(skel.root, list)


_VALID = [pickle.dumps(v, protocol=p) for p in (0, 2, 4, 5) for v in (
    {"model": {"w": 1.5}, "step": 3, "s": {1, 2}}, [b"abc", (1, 2), None, True], "x" * 50)]
_VALID.append(pickletools.optimize(_VALID[0]))


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.binary(max_size=512),
    st.tuples(st.sampled_from(_VALID), st.integers(0, 400), st.binary(min_size=1, max_size=8)).map(
        lambda t: t[0][: t[1] % len(t[0])] + t[2] + t[0][t[1] % len(t[0]) + len(t[2]):]),
))
def test_fuzzed_bytes_never_escape(data: bytes) -> None:
    """Random and mutated pickles: a skeleton or a PickleInspectError, nothing else, quickly."""
    with contextlib.suppress(PickleInspectError):
        inspect_pickle(data, Limits(max_ops=100_000, max_seconds=1.0, max_bytes=1 << 20))


@pytest.fixture(scope="module")
def real_files(ckpts: dict[str, Path]) -> list[bytes]:
    return [ckpts[n].read_bytes() for n in ("complete", "legacy", "model_only")]


@settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 2), at=st.integers(0, 1 << 20), junk=st.binary(min_size=1, max_size=16))
def test_mutated_checkpoint_files_never_raise(real_files: list[bytes], tmp_path: Path, which: int, at: int,
                                              junk: bytes) -> None:
    """Corrupt real torch.save / legacy files: inspect_checkpoint returns a result, never raises."""
    data = real_files[which]
    at %= len(data)
    path = tmp_path / "mutated.pt"
    path.write_bytes(data[:at] + junk + data[at + len(junk):])
    info = inspect_checkpoint(path)
    assert info.format
