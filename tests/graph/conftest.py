"""Helpers for the graph tests: small OpGraphs built from edge lists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nodecast.graph.opgraph import OP_COLUMNS, OpGraph, OpKind
from nodecast.graph.replay import topological_order


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
    from nodecast.models import base

    base.model_names()  # the built-in models first, so that they keep their order
    monkeypatch.setitem(base._REGISTRY, EveryOtherCopy.name, EveryOtherCopy)
    return EveryOtherCopy.name


#: ../shared/data/traces beside the repository.
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    """``shared_traces`` for module-scoped fixtures: the real traces, or a skip when they are absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (real traces live beside the repository, not in a clone)")
    return SHARED
