"""One size parser serves the OOM predicates and the hook: the figures torch's allocator prints."""

from __future__ import annotations

import pytest

from diagnose.hook.collect import oom_figures
from diagnose.units import parse_size, size_bytes, slurm_mib


@pytest.mark.parametrize(("text", "want"), [
    ("216.00 MiB", 216 * 2**20), ("7.92 GiB", 7.92 * 2**30), ("512 bytes", 512.0), ("20 MB", 20e6),
    ("1.5 gib", 1.5 * 2**30), (" 3 KiB ", 3 * 2**10),
])
def test_sizes_as_torch_prints_them(text: str, want: float) -> None:
    assert parse_size(text) == pytest.approx(want)


@pytest.mark.parametrize("text", [None, "", "MiB", "12", "12 parsecs", "x.y GiB"])
def test_unreadable_sizes_are_none(text: object) -> None:
    assert parse_size(text) is None


@pytest.mark.parametrize(("text", "want"), [
    ("4G", 4096.0), ("4000", 4000.0), ("512M", 512.0), ("2048K", 2.0), ("1T", 1024.0 * 1024), ("16gb", 16384.0),
])
def test_slurm_memory_requests_in_mib(text: str, want: float) -> None:
    assert slurm_mib(text) == pytest.approx(want)


@pytest.mark.parametrize("text", [None, "", "0", "0G", "lots", "4X"])
def test_slurm_requests_without_a_limit_or_unreadable_are_none(text: object) -> None:
    assert slurm_mib(text) is None  # --mem=0 asks for all of the node's memory: no limit to fall under


def test_size_bytes_of_number_and_unit() -> None:
    assert size_bytes("2.50", "GiB") == 2.5 * 2**30
    assert size_bytes("2.50", "furlongs") is None


def test_hook_reads_the_oom_figures_with_the_same_parser() -> None:
    msg = ("CUDA out of memory. Tried to allocate 2.50 GiB. GPU 5 has a total capacity of 79.10 GiB of which "
           "1.20 GiB is free. Including non-PyTorch memory, this process has 77.89 GiB memory in use.")
    got = oom_figures(msg)
    assert got["requested"] == int(2.5 * 2**30)
    assert got["total"] == int(79.10 * 2**30) and got["free"] == int(1.20 * 2**30)
    assert got["in_use"] == int(77.89 * 2**30) and got["device"] == "cuda:5"
