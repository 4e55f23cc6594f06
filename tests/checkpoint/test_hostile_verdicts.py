"""Verdicts match torch.load: a file that torch.load(weights_only=False) lets run code is never clean.

Each hostile file plants a canary: a real torch.load in a child process (in an empty folder)
shows whether loading runs code. `diagnose checkpoint` must name a dangerous global exactly for
those, and the text report must say so on its first line.
"""

from __future__ import annotations

import io
import pickle
import struct
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from diagnose.probes.checkpoint.probe import inspect_checkpoint

pytestmark = pytest.mark.torch

CANARY = "canary"


def _u(text: str) -> bytes:
    data = text.encode()
    return pickle.SHORT_BINUNICODE + bytes([len(data)]) + data


def proto0_global(folder: Path) -> bytes:
    """Protocol 0: no PROTO header, the stream starts with GLOBAL (`cposix\\nsystem`)."""
    return f"cposix\nsystem\n(Vtouch {folder / CANARY}\ntR.".encode()


def proto1_global(folder: Path) -> bytes:
    """Protocol 1 style: GLOBAL then a binary unicode argument, no PROTO header."""
    arg = f"touch {folder / CANARY}".encode()
    return b"cposix\nsystem\n(X" + struct.pack("<I", len(arg)) + arg + b"tR."


def dotted_alias(folder: Path) -> bytes:
    """Protocol 4 STACK_GLOBAL through a module alias of an allowed module: filesystem.os.system."""
    return (b"\x80\x04" + _u("torch.distributed.checkpoint.filesystem") + _u("os.system") + pickle.STACK_GLOBAL
            + _u(f"touch {folder / CANARY}") + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP)


def planner_reduce(folder: Path) -> bytes:
    """`torch.distributed.checkpoint.planner.reduce` is functools.reduce: reduce(torch.save, [obj, path])."""
    return (b"\x80\x04" + _u("torch.distributed.checkpoint.planner") + _u("reduce") + pickle.STACK_GLOBAL
            + _u("torch") + _u("save") + pickle.STACK_GLOBAL
            + pickle.MARK + _u("payload") + _u(str(folder / CANARY)) + pickle.LIST
            + pickle.TUPLE2 + pickle.REDUCE + pickle.STOP)


def build_patch(folder: Path) -> bytes:
    """BUILD on a global: sets an attribute of the `os.path` module on load (a monkeypatch), then runs it."""
    return (b"\x80\x04" + _u("os") + _u("path") + pickle.STACK_GLOBAL
            + _u("posix") + _u("system") + pickle.STACK_GLOBAL
            + _u(f"touch {folder / CANARY}") + pickle.TUPLE1 + pickle.REDUCE + pickle.POP
            + pickle.EMPTY_DICT + _u("diagnose_patched") + pickle.NEWTRUE + pickle.SETITEM + pickle.BUILD
            + pickle.STOP)


def build_patch_only(folder: Path) -> bytes:
    """BUILD on a module global (`torch.nn`): sets an attribute of the module on load; no other global."""
    return (b"\x80\x04" + _u("torch") + _u("nn") + pickle.STACK_GLOBAL
            + pickle.EMPTY_DICT + _u("diagnose_patched") + pickle.NEWTRUE + pickle.SETITEM + pickle.BUILD
            + pickle.STOP)


def _torch_zip(payloads: list[bytes]) -> bytes:
    """A torch.save zip whose `archive/data.pkl` is stored once per payload (duplicates when several)."""
    good = io.BytesIO()
    torch.save({"w": torch.ones(2)}, good)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good.getvalue())) as src, zipfile.ZipFile(out, "w") as dst, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name: that is the point
        for info in src.infolist():
            for data in payloads if info.filename.endswith("/data.pkl") else [src.read(info.filename)]:
                dst.writestr(info.filename, data)
    return out.getvalue()


def zip_hostile(folder: Path) -> bytes:
    return _torch_zip([f"cposix\nsystem\n(Vtouch {folder / CANARY}\ntR.".encode()])


def clean_save(folder: Path) -> bytes:
    buf = io.BytesIO()
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "step": 3}, buf)
    return buf.getvalue()


def clean_legacy(folder: Path) -> bytes:
    buf = io.BytesIO()
    torch.save({"model": torch.nn.Linear(2, 2).state_dict()}, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


def clean_proto0(folder: Path) -> bytes:
    return pickle.dumps({"model": {"w": [1.0, 2.0]}, "step": 3}, protocol=0)


CASES: dict[str, Callable[[Path], bytes]] = {
    "proto0_global": proto0_global, "proto1_global": proto1_global, "dotted_alias": dotted_alias,
    "planner_reduce": planner_reduce, "build_patch": build_patch, "build_patch_only": build_patch_only,
    "zip_hostile": zip_hostile, "clean_save": clean_save, "clean_legacy": clean_legacy,
    "clean_proto0": clean_proto0,
}


def _torch_load_runs_code(path: Path, folder: Path) -> bool:
    code = (f"import torch\ntry:\n    torch.load({str(path)!r}, weights_only=False)\nexcept Exception:\n    pass\n"
            "import os\n"
            "print('PATCHED' if getattr(torch.nn, 'diagnose_patched', None)"
            " or getattr(os.path, 'diagnose_patched', None) else 'plain')")
    out = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120)
    return (folder / CANARY).exists() or "PATCHED" in out.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_verdict_matches_what_torch_load_does(name: str, tmp_path: Path) -> None:
    folder = tmp_path / "load"
    folder.mkdir()
    path = tmp_path / f"{name}.pt"
    path.write_bytes(CASES[name](folder))
    info = inspect_checkpoint(path)
    assert not (folder / CANARY).exists(), "inspecting ran the payload"
    runs = _torch_load_runs_code(path, folder)
    assert runs == (not name.startswith("clean_")), f"the fixture itself is wrong: torch.load runs={runs}"
    assert bool(info.dangerous_globals) == runs, (name, info.dangerous_globals, info.error)


def test_text_report_names_the_dangerous_global_first(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    path.write_bytes(dotted_alias(tmp_path))
    out = subprocess.run([sys.executable, "-m", "diagnose", "checkpoint", str(path)], capture_output=True,
                         text=True, timeout=60, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    first = out.stdout.splitlines()[0]
    assert "DANGER" in first and "torch.distributed.checkpoint.filesystem.os.system" in first, out.stdout


def test_duplicate_archive_members_are_all_read_and_flagged(tmp_path: Path) -> None:
    benign = pickle.dumps({"w": 1}, protocol=2)
    hostile = f"cposix\nsystem\n(Vtouch {tmp_path / CANARY}\ntR.".encode()
    for order in ((benign, hostile), (hostile, benign)):
        path = tmp_path / "dup.pt"
        path.write_bytes(_torch_zip(list(order)))
        info = inspect_checkpoint(path)
        assert info.dangerous_globals == ["posix.system"]
        assert any("ambiguous archive" in p for p in info.problems), info.problems
