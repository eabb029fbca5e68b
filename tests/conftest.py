"""Fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest

#: ../shared/data/traces beside the repository (absent in a user's own clone).
SHARED_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


@pytest.fixture
def shared_traces() -> Path:
    """The real profiler traces in ../shared/data/traces; skips the test when they are absent."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"{SHARED_TRACES} is absent (real traces live beside the repository, not in a clone)")
    return SHARED_TRACES
