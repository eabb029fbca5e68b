"""Helpers for the graph tests: small OpGraphs built from edge lists."""

from __future__ import annotations

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
