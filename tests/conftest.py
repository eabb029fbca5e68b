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


#: ../shared/data/cross-gpu: public per-op latencies measured on many GPUs (NeuSight, AIConfigurator; README there).
SHARED_CROSS_GPU = SHARED_TRACES.parent / "cross-gpu"


@pytest.fixture
def shared_cross_gpu() -> Path:
    """The cross-GPU measurement corpora in ../shared/data/cross-gpu; skips the test when they are absent."""
    if not SHARED_CROSS_GPU.is_dir():
        pytest.skip(f"{SHARED_CROSS_GPU} is absent (real inputs live beside the repository, not in a clone)")
    return SHARED_CROSS_GPU


def pytest_collection_modifyitems(config, items):
    """Without ../shared, tests parametrized over its files have no parameters: say why they skip."""
    if SHARED_TRACES.parent.is_dir():
        return
    reason = f"{SHARED_TRACES.parent} is absent (real inputs live beside the repository, not in a clone)"
    for item in items:
        mark = item.get_closest_marker("skip")
        if mark is not None and str(mark.kwargs.get("reason", "")).startswith("got empty parameter set"):
            item.add_marker(pytest.mark.skip(reason=reason), append=False)
