"""Launch and dependency latencies, calibrated per trace: the LAUNCH edges (API call -> GPU op) and the lag of
every edge by which a GPU op waits for another (see ``calibrate``). Seconds."""

from __future__ import annotations

import numpy as np

from nodecast.graph.edges import EdgeLists
from nodecast.graph.opgraph import Anchor, EdgeKind
from nodecast.traces.api import ApiCalls
from nodecast.traces.kinds import CopyKind, OpKind, TransferClass

_NS = 1e-9

#: Minimum idle launches per class before its own launch latency is used.
_MIN_SAMPLES = 3
#: Minimum waits per class pair before a dependency latency is used (rarer waits are not a
#: GPU property but something the trace does not show, such as a late launch on another thread).
_MIN_DEP_SAMPLES = 20

#: GPU -> GPU edges whose lag is the GPU's dependency latency (calibrated per trace).
_DEPENDENCY_KINDS = (EdgeKind.STREAM_ORDER, EdgeKind.ENGINE_ORDER, EdgeKind.EVENT_WAIT, EdgeKind.DEFAULT_STREAM,
                     EdgeKind.GRAPH_ORDER)
_DEP_CLASSES = ("kernel", "memset", "copy HtoD", "copy DtoH", "copy other")


def _dep_class(g, idx: np.ndarray) -> np.ndarray:
    """Dependency-latency class of GPU ops (index into ``_DEP_CLASSES``)."""
    out = np.full(len(idx), 4, np.int64)
    kind, copy = g["kind"][idx], g["copy"][idx]
    out[kind == OpKind.KERNEL] = 0
    out[kind == OpKind.MEMSET] = 1
    out[(kind == OpKind.MEMCPY) & np.isin(copy, (CopyKind.HTOD, CopyKind.UVM_HTOD))] = 2
    out[(kind == OpKind.MEMCPY) & np.isin(copy, (CopyKind.DTOH, CopyKind.UVM_DTOH))] = 3
    return out


def _gpu_edges(g, edges: EdgeLists) -> tuple[np.ndarray, ...]:
    """(src, dst, measured time the edge allows, list index) of every edge collected so far (all GPU -> GPU)."""
    src = np.concatenate(edges.src) if edges.src else np.zeros(0, np.int32)
    dst = np.concatenate(edges.dst) if edges.dst else np.zeros(0, np.int32)
    anchor = np.concatenate(edges.anchor) if edges.anchor else np.zeros(0, np.int8)
    lag = np.concatenate(edges.lag) if edges.lag else np.zeros(0)
    t = np.where(anchor == Anchor.START, g["start"][src], g["end"][src]) + np.round(lag / _NS).astype(np.int64)
    return src, dst, t


def calibrate(g, api: ApiCalls, link: np.ndarray, blocking: np.ndarray, edges: EdgeLists,
               n_g: int) -> tuple[dict[str, float], dict[str, float]]:
    """Add the LAUNCH edges and set the lag of GPU-side dependency edges, both calibrated per trace.

    Launch latency (per op class): median, over ops launched while idle
    (every GPU-side predecessor had ended on the measured timeline by the
    call's anchor time), of GPU start - anchor (call end; call start for a
    blocking call). Dependency latency (per class of the waiting op and of
    the op it waited for): median, over ops whose start was set by a GPU-side
    predecessor rather than by their launch, of start - that predecessor's
    end (the few microseconds a GPU takes to start work released by other
    work: copy-engine turnaround, a kernel after a copy). Both are medians
    over the trace, never an op's own recorded start. Returns both tables, s.
    """
    src, dst, t = _gpu_edges(g, edges)
    ready = np.full(n_g, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(ready, dst, t)
    has = np.flatnonzero(link >= 0)
    lat: dict[str, float] = {}
    lag_per_op = np.zeros(n_g)
    if len(has):
        rows = link[has]
        anchor_ns = np.where(blocking[rows], api["start_ns"][rows], api["end_ns"][rows])
        delta = (g["start"][has] - anchor_ns) * _NS
        idle = ready[has] <= anchor_ns
        cls = _op_class(g, has)
        overall = float(np.median(delta[idle])) if idle.any() else float(np.median(delta))
        per_op = np.full(len(has), overall)
        for c in np.unique(cls):
            mine = cls == c
            sample = delta[mine & idle]
            value = float(np.median(sample)) if len(sample) >= _MIN_SAMPLES else overall
            lat[_class_label(int(c))] = value
            per_op[mine] = value
        lag_per_op[has] = per_op
        edges.add(n_g + rows, has, EdgeKind.LAUNCH, Anchor.END, per_op)
        launch_at = np.full(n_g, np.iinfo(np.int64).max, np.int64)
        # Ops launched by blocking calls (pageable copies) start after host-side staging of
        # variable length: they say nothing about the GPU's own dependency latency.
        free = ~blocking[rows]
        launch_at[has[free]] = anchor_ns[free] + np.round(per_op[free] / _NS).astype(np.int64)
    else:
        launch_at = np.full(n_g, np.iinfo(np.int64).max, np.int64)
    dep = _dependency_latency(g, src, dst, t, ready, launch_at)
    if dep:
        table = np.array([[dep.get((a, b), 0.0) for b in range(len(_DEP_CLASSES))]
                          for a in range(len(_DEP_CLASSES))])
        for i in range(len(edges.src) - (1 if len(has) else 0)):  # every list but the launch edges just added
            if edges.kind[i][0] in _DEPENDENCY_KINDS:
                is_end = edges.anchor[i] == Anchor.END
                lag = table[_dep_class(g, edges.src[i]), _dep_class(g, edges.dst[i])]
                edges.lag[i] = np.where(is_end, lag, edges.lag[i])
    labels = {f"{_DEP_CLASSES[k[0]]} -> {_DEP_CLASSES[k[1]]}": v for k, v in dep.items()}
    return lat, labels


def _dependency_latency(g, src: np.ndarray, dst: np.ndarray, t: np.ndarray, ready: np.ndarray,
                        launch_at: np.ndarray) -> dict:
    """Median start - predecessor end per (predecessor class, op class), over ops whose start a
    GPU-side predecessor set (see ``calibrate``); a pair with fewer than ``_MIN_DEP_SAMPLES`` such ops
    is left out (lag 0: the measured run never waited that way)."""
    if len(src) == 0:
        return {}
    waited = (ready > launch_at) & (launch_at < np.iinfo(np.int64).max)
    # The binding edge of each op: the one whose allowed time is its ready time.
    binding = waited[dst] & (t == ready[dst])
    b_src, b_dst = src[binding], dst[binding]
    _, first = np.unique(b_dst, return_index=True)
    b_src, b_dst = b_src[first], b_dst[first]
    if len(b_dst) == 0:
        return {}
    gap = np.maximum((g["start"][b_dst] - ready[b_dst]) * _NS, 0.0)
    a, b = _dep_class(g, b_src), _dep_class(g, b_dst)
    out: dict = {}
    for pa in np.unique(a):
        for pb in np.unique(b[a == pa]):
            sample = gap[(a == pa) & (b == pb)]
            if len(sample) >= _MIN_DEP_SAMPLES:
                out[(int(pa), int(pb))] = float(np.median(sample))
    return out


def _op_class(g, idx: np.ndarray) -> np.ndarray:
    """Launch-latency class of GPU ops: -1 kernel, -2 memset, else the copy's TransferClass."""
    out = g["tclass"][idx].astype(np.int64)
    out[g["kind"][idx] == OpKind.KERNEL] = -1
    out[g["kind"][idx] == OpKind.MEMSET] = -2
    return out


def _class_label(c: int) -> str:
    return {-1: "kernel", -2: "memset"}.get(c) or TransferClass(c).key
