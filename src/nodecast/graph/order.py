"""Ordering an OpGraph's edges: Kahn's topological order and the counting sort of edges by destination.

Both are structure of the graph itself (``graph.build`` and ``graph.taskgraph`` order their edges with them), so they
live in ``graph/`` below the engine that replays the graph. Compiled with numba: a Python loop over a trace's
millions of edges is the build's largest cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_KERNELS: dict[str, Any] = {}


def _compiled() -> dict[str, Any]:
    """The numba kernels, compiled (or loaded from numba's cache) on first use."""
    if _KERNELS:
        return _KERNELS
    from numba import njit

    @njit(cache=True)
    def topo(n, indptr, src, indeg, outcount, fill):  # pragma: no cover - compiled
        # indeg, outcount (n + 1, zeros) and fill: work arrays of the caller's dtype (int32 below 2^31 edges)
        for v in range(n):
            indeg[v] = indptr[v + 1] - indptr[v]
        for e in range(src.shape[0]):
            outcount[src[e] + 1] += 1
        for v in range(n):
            outcount[v + 1] += outcount[v]
        fill[:] = outcount[:n]
        outdst = np.empty(src.shape[0], np.int32)
        for v in range(n):
            for e in range(indptr[v], indptr[v + 1]):
                u = src[e]
                outdst[fill[u]] = v
                fill[u] += 1
        order = np.empty(n, np.int32)
        tail = 0
        for v in range(n):
            if indeg[v] == 0:
                order[tail] = v
                tail += 1
        head = 0
        while head < tail:
            u = order[head]
            head += 1
            for k in range(outcount[u], outcount[u + 1]):
                w = outdst[k]
                indeg[w] -= 1
                if indeg[w] == 0:
                    order[tail] = w
                    tail += 1
        return order, tail

    @njit(cache=True)
    def positions(dst, n):  # pragma: no cover - compiled
        indptr = np.zeros(n + 1, np.int64)
        for e in range(dst.shape[0]):
            indptr[dst[e] + 1] += 1
        for v in range(n):
            indptr[v + 1] += indptr[v]
        fill = indptr[:n].copy()
        pos = np.empty(dst.shape[0], np.int32)
        for e in range(dst.shape[0]):  # stable: edges keep their order within a destination
            pos[e] = fill[dst[e]]
            fill[dst[e]] += 1
        return indptr, pos

    _KERNELS.update(topo=topo, positions=positions)
    return _KERNELS


def topological_order(n: int, indptr: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kahn's algorithm over CSR in-edges: (order, ops left on a cycle).

    ``order`` (int32) lists the ops that could be ordered, sources first in
    index order; the second array holds the ops never released (every op on
    or behind a cycle), empty for an acyclic graph.
    """
    # NOTE: int32 work arrays when the edges allow (4 B per op each instead of 8: the build's memory peak).
    work = np.int32 if len(src) < np.iinfo(np.int32).max else np.int64
    order, count = _compiled()["topo"](np.int64(n), indptr.astype(np.int64, copy=False),
                                       src.astype(np.int32, copy=False), np.empty(n, work), np.zeros(n + 1, work),
                                       np.empty(n, work))
    if count == n:
        return order, np.zeros(0, np.int32)
    placed = np.zeros(n, bool)
    placed[order[:count]] = True
    return order[:count], np.flatnonzero(~placed).astype(np.int32)


def csr_positions(dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Counting sort of edges by destination: (indptr, new position of every edge, int32)."""
    return _compiled()["positions"](dst.astype(np.int32, copy=False), np.int64(n))


