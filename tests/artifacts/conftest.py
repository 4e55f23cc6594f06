"""Fixture folders of the artifact tests (see SOURCES.md for where each file comes from)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixture_text():
    """Read a fixture file by its path under fixtures/."""
    return lambda rel: (FIXTURES / rel).read_text(encoding="utf-8")
