"""Fixtures shared by every test package: shared data, small OpGraphs, the StarPU data and the SimGrid oracle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
import functools
import json
import subprocess
import sys

import numpy as np
import pytest

from nodecast.graph.order import topological_order
from nodecast.graph.opgraph import OP_COLUMNS, OpGraph, OpKind

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


# --- small OpGraphs and a test model (the graph, engine, cost and workflow tests)

def make_graph(n: int, edges: list[tuple[int, int, int, int, float]], *, kinds=None, release=None) -> OpGraph:
    """An OpGraph of ``n`` ops from (src, dst, EdgeKind, Anchor, lag_s) tuples (kernels by default)."""
    ops = {k: np.zeros(n, dtype=d) for k, d in OP_COLUMNS.items()}
    ops["kind"][:] = OpKind.KERNEL if kinds is None else kinds
    ops["name_id"][:] = -1
    ops["release_s"][:] = 0.0 if release is None else release
    e = np.array(edges, dtype=float).reshape(-1, 5)
    dst = e[:, 1].astype(np.int64)
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    src = e[order, 0].astype(np.int32)
    topo, stuck = topological_order(n, indptr, src)
    return OpGraph(ops=ops, indptr=indptr, src=src, kind=e[order, 2].astype(np.int8),
                   anchor=e[order, 3].astype(np.int8), lag_s=e[order, 4], order=topo, names=[], origin_ns=0)


@pytest.fixture
def graph_of():
    """``make_graph`` as a fixture."""
    return make_graph


class EveryOtherCopy:
    """A test model (registered only by the ``every_other`` fixture): handles the copies of even trace rows
    at 1 ms with an interval [0.5 ms, 3 ms], and nothing else."""

    name = "test-every-other"
    kind = "transfer"
    baseline = False
    description = "test model"

    def accepts(self, trace):  # noqa: ANN001, ANN201
        return (trace["kind"] == 1) & (np.arange(len(trace)) % 2 == 0)

    def project(self, trace, source, target):  # noqa: ANN001, ANN201
        from nodecast.models.base import ModelResult

        ok = self.accepts(trace)
        return ModelResult(self.name, np.where(ok, 1e-3, np.nan), np.where(ok, 0.5e-3, np.nan),
                           np.where(ok, 3e-3, np.nan))


@pytest.fixture
def every_other(monkeypatch):
    """Registers ``EveryOtherCopy`` for one test; returns its name."""
    from nodecast.models import registry

    registry.model_names()  # the built-in models first, so that they keep their order
    monkeypatch.setitem(registry._REGISTRY, EveryOtherCopy.name, EveryOtherCopy)
    return EveryOtherCopy.name


#: ../shared/data/traces beside the repository.
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    """``shared_traces`` for module-scoped fixtures: the real traces, or a skip when they are absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (real traces live beside the repository, not in a clone)")
    return SHARED


# --- the StarPU data and the SimGrid oracle (the engine, runtime and simulate tests)

#: ../shared/data/starpu relative to the repository root.
STARPU_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "starpu"
SIMGRID_PYTHON = "/usr/bin/python3"
ORACLE = Path(__file__).resolve().parent / "simgrid_oracle.py"


@functools.cache
def simgrid_missing_reason() -> str | None:
    """Why the SimGrid oracle cannot run here, or None when it can."""
    if not Path(SIMGRID_PYTHON).exists():
        return f"{SIMGRID_PYTHON} does not exist (install Debian's python3-simgrid)"
    try:
        proc = subprocess.run(
            [SIMGRID_PYTHON, "-c", "import simgrid"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {SIMGRID_PYTHON}: {exc}"
    if proc.returncode != 0:
        return f"{SIMGRID_PYTHON} cannot import simgrid (apt-get install -y python3-simgrid)"
    return None


@pytest.fixture
def starpu_data() -> Path:
    """The shared StarPU calibration folder; skips the test when it is absent."""
    if not STARPU_DATA.is_dir():
        pytest.skip(f"shared StarPU data not found at {STARPU_DATA}")
    return STARPU_DATA


def _run_oracle(spec: dict, folder: Path) -> dict[str, float]:
    path = folder / "oracle_spec.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.run(
        [SIMGRID_PYTHON, str(ORACLE), str(path)], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        pytest.fail(f"SimGrid oracle failed with code {proc.returncode}")
    return json.loads(proc.stdout.splitlines()[-1])["done"]


@pytest.fixture
def simgrid_oracle(tmp_path) -> Callable[[dict], dict[str, float]]:
    """Run a scenario spec in SimGrid (see simgrid_oracle.py); skips when /usr/bin/python3 cannot import simgrid."""
    reason = simgrid_missing_reason()
    if reason:
        pytest.skip(reason)
    return lambda spec: _run_oracle(spec, tmp_path)
