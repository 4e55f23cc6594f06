"""Session fixtures of the scan benchmark: the 512 MB corpus is generated once (seeded) per session.

The benchmark only runs with DIAGNOSE_BENCH=1 (see test_bench_scan.py); the corpus goes under
DIAGNOSE_BENCH_DIR if set (reused when its planted.json exists), else under pytest's basetemp.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from bench_corpus import RANKS, Planted, generate  # noqa: E402


@pytest.fixture(scope="session")
def bench_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Planted]]:
    if os.environ.get("DIAGNOSE_BENCH") != "1":
        pytest.skip("benchmark: set DIAGNOSE_BENCH=1")
    fixed = os.environ.get("DIAGNOSE_BENCH_DIR")
    root = Path(fixed) / "corpus" if fixed else tmp_path_factory.mktemp("bench") / "corpus"
    meta = root.parent / f"{root.name}.planted.json"
    if meta.exists() and len(list(root.glob("rank-*.log"))) == RANKS:
        return root, [Planted(**{**d, "lines": tuple(d["lines"])}) for d in json.loads(meta.read_text())]
    return root, generate(root)
