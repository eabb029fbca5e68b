"""Replay an OpGraph: the start and end of every op, given per-op durations.

The fast path is one pass in topological order (no event queue): for every
op ``v`` in ``graph.order``,

    start[v] = max(start_s + release_s[v],
                   max over in-edges (u, anchor, lag) of  T_anchor(u) + lag)     (1)
    end[v]   = start[v] + duration[v]                                           (2)

with T_START(u) = start[u] and T_END(u) = end[u] (opgraph.py, equation 1).
This is exact when nothing is shared between concurrent ops beyond what the
edges say: stream order, copy-engine order and host threads are all edges.
It is compiled with numba (``@njit(cache=True)``, imported on first use:
about 5 ms per million ops after a one-off compile of under a second).

Link sharing: copies that overlap on one link share its bandwidth (fluid
max-min), which makes a copy's duration depend on the schedule.
``event_replay.replay_shared`` decides from the graph and the machine's routes
whether anything can share (and keeps this single pass when nothing does), and
otherwise runs the simulator's event engine over the copies and this
recurrence, compiled, over the rest.

``replay_reference`` is the same recurrence in plain Python, kept for tests.
The topological order it follows is ``graph.order.topological_order``, made when the graph is built.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from nodecast.graph.opgraph import OpGraph


_KERNELS: dict[str, Any] = {}


def _compiled() -> dict[str, Any]:
    """The numba kernels, compiled (or loaded from numba's cache) on first use."""
    if _KERNELS:
        return _KERNELS
    from numba import njit

    @njit(cache=True)
    def forward(order, indptr, src, anchor, lag, release, dur, start0, start, end):  # pragma: no cover
        for i in range(order.shape[0]):
            v = order[i]
            s = start0 + release[v]
            for e in range(indptr[v], indptr[v + 1]):
                u = src[e]
                t = (start[u] if anchor[e] == 0 else end[u]) + lag[e]
                if t > s:
                    s = t
            start[v] = s
            end[v] = s + dur[v]

    _KERNELS.update(forward=forward)
    return _KERNELS


@dataclass
class Schedule:
    """Start and end of every op, float64 seconds after the graph's origin (``origin_ns``)."""

    start_s: np.ndarray
    end_s: np.ndarray
    origin_ns: int = 0

    def __len__(self) -> int:
        return len(self.start_s)


def _check_durations(graph: OpGraph, durations_s: np.ndarray) -> np.ndarray:
    dur = np.asarray(durations_s, dtype=np.float64)
    if dur.shape != (len(graph),):
        msg = f"durations_s has shape {dur.shape}, expected ({len(graph)},) (one per op)"
        raise ValueError(msg)
    if not np.isfinite(dur).all() or (dur < 0).any():
        msg = "durations_s must be finite and non-negative"
        raise ValueError(msg)
    return dur


def replay(graph: OpGraph, durations_s: np.ndarray, start_s: float = 0.0) -> Schedule:
    """Schedule ``graph`` with ``durations_s`` (seconds, one per op) by equations (1)-(2).

    ``start_s`` is the time of the graph's origin (its first timestamp).
    """
    dur = _check_durations(graph, durations_s)
    n = len(graph)
    start = np.empty(n, np.float64)
    end = np.empty(n, np.float64)
    _compiled()["forward"](graph.order, graph.indptr, graph.src, graph.anchor, graph.lag_s,
                           graph.ops["release_s"], dur, np.float64(start_s), start, end)
    return Schedule(start, end, graph.origin_ns)


def replay_reference(graph: OpGraph, durations_s: np.ndarray, start_s: float = 0.0) -> Schedule:
    """Equations (1)-(2) in plain Python with its own Kahn order: the reference for tests."""
    dur = _check_durations(graph, durations_s)
    n = len(graph)
    preds: list[list[tuple[int, int, float]]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for e in range(int(graph.indptr[v]), int(graph.indptr[v + 1])):
            u = int(graph.src[e])
            preds[v].append((u, int(graph.anchor[e]), float(graph.lag_s[e])))
            succs[u].append(v)
    indeg = [len(p) for p in preds]
    ready = deque(v for v in range(n) if indeg[v] == 0)
    start = [0.0] * n
    end = [0.0] * n
    done = 0
    while ready:
        v = ready.popleft()
        done += 1
        s = start_s + float(graph.ops["release_s"][v])
        for u, anchor, lag in preds[v]:
            s = max(s, (start[u] if anchor == 0 else end[u]) + lag)
        start[v], end[v] = s, s + float(dur[v])
        for w in succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if done != n:
        msg = "the graph has a cycle"
        raise ValueError(msg)
    return Schedule(np.array(start), np.array(end), graph.origin_ns)
