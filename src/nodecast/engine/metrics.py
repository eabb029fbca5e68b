"""Whole-program times of a schedule: end-to-end, GPU-busy per device, the critical path.

Definitions (seconds; schedules count from the graph's origin, the trace's
first timestamp: its first host API record, or an earlier GPU op without
one):

- end-to-end = end of the last GPU op - origin                              (1)
  ("first API call to last GPU op"; host calls after the last GPU op, such
  as frees at exit, are not counted). A trace without host API records
  (nvprof GPU-trace CSV, a table of ops) has its first GPU op as origin:
  "first GPU op start to last GPU op end". Every table and page labels the
  span with ``end_to_end_label`` so that it says which. A file holding
  several runs, each timed from its own start (nvprof GPU-trace CSV), is
  joined back to back by its reader, so its end to end is the sum of the
  runs' spans, without the untimed gaps between them (``traces.nvprof_csv``);
- GPU-busy(d) = length of the union of the [start, end) intervals of the GPU
  ops of device d (time during which at least one kernel, copy or memset
  runs on it)                                                                (2)
- GPU time(d) = sum of those ops' durations (counts overlapping ops twice);
- critical path: from the last GPU op, walk back through the in-edge that
  set each op's start (equation (1) of replay.py) to an op that starts at its
  release time. Its length is exactly the end-to-end time; each op on it
  contributes its duration (unless the path leaves it from its start: a
  NESTING or RECORDED_OFFSET edge) and each edge its lag, summed per
  category (kernels, copies per transfer class, memsets, host API calls,
  host gaps between calls, launch latency, GPU dependency latency, sync
  returns). On the event path of a replay with copy engines or kernel
  slots (``event_replay``) an op may start later than all its in-edges
  allow, waiting for a free unit: that wait is its own category, so that
  the breakdown still sums to the end-to-end time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nodecast import notes as nn

from nodecast.graph.opgraph import Anchor, EdgeKind, OpGraph, OpKind
from nodecast.engine.replay import Schedule
from nodecast.traces.collectives import parse_kernel_name
from nodecast.traces.kinds import TransferClass

_BACKTRACK: dict[str, Any] = {}


def end_to_end_s(graph: OpGraph, schedule: Schedule) -> float:
    """Equation (1): last GPU op end minus the origin (0), seconds."""
    gpu = graph.gpu_mask()
    return float(schedule.end_s[gpu].max()) if gpu.any() else 0.0


def has_api_records(graph: OpGraph) -> bool:
    """Whether ``graph`` holds host API records (ops of kind API): its origin is then its first API call (or an
    earlier GPU op without API record), else its first GPU op."""
    return bool(np.any(graph.ops["kind"] == OpKind.API))


def notes_have_api(notes: Iterable[str]) -> bool:
    """``has_api_records`` of the graph these notes came from, for results that keep its notes but not the graph
    (a comparison of targets): the builder's ``notes.NO_API`` note says it has none."""
    return not any(nn.about(n) == nn.NO_API for n in notes)


def end_to_end_start(graph: OpGraph | bool) -> str:
    """Where end to end (equation (1)) starts, in words: ``first API call``, or ``first GPU op start`` for a graph
    without host API records. ``graph``: the graph, or whether it has API records (``has_api_records``) where
    only that is known."""
    has_api = graph if isinstance(graph, bool) else has_api_records(graph)
    return "first API call" if has_api else "first GPU op start"


def end_to_end_label(graph: OpGraph | bool) -> str:
    """The end-to-end row's label: ``end to end (first API call to last GPU op end)``, or ``(first GPU op start
    ...`` for a graph without host API records (``end_to_end_start``)."""
    return f"end to end ({end_to_end_start(graph)} to last GPU op end)"


def busy_s(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of intervals [start, end), seconds (equation (2)), vectorized."""
    if len(start) == 0:
        return 0.0
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]  # a gap before this interval starts a new busy segment
    seg_start = s[new]
    seg_end = reach[np.r_[np.flatnonzero(new)[1:] - 1, len(s) - 1]]
    return float((seg_end - seg_start).sum())


def gpu_busy_s(graph: OpGraph, schedule: Schedule) -> dict[int, float]:
    """GPU-busy time per device, seconds (equation (2))."""
    gpu = graph.gpu_mask()
    dev = graph.ops["device"]
    return {int(d): busy_s(schedule.start_s[gpu & (dev == d)], schedule.end_s[gpu & (dev == d)])
            for d in np.unique(dev[gpu])}


def gpu_time_s(graph: OpGraph, durations_s: np.ndarray) -> dict[int, float]:
    """Sum of GPU op durations per device, seconds."""
    gpu = graph.gpu_mask()
    dev = graph.ops["device"]
    return {int(d): float(durations_s[gpu & (dev == d)].sum()) for d in np.unique(dev[gpu])}


@dataclass
class CriticalPath:
    """The ops on the critical path (last first) and its length per category, seconds."""

    ops: np.ndarray  # int32 op indices, from the last GPU op back to a released op
    breakdown_s: dict[str, float]
    op_time_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # time each op of ``ops`` adds to the path

    @property
    def length_s(self) -> float:
        """Sum of the breakdown: the end-to-end time of the schedule it was taken from."""
        return float(sum(self.breakdown_s.values()))


def _kernel() -> Any:
    if _BACKTRACK:
        return _BACKTRACK["walk"]
    from numba import njit

    @njit(cache=True)
    def walk(v0, indptr, src, anchor, lag, release, start, end, start0, ops, edge, tol):  # pragma: no cover
        # Returns (ops on the path, time ops waited beyond their binding edge: a free unit, event path).
        v = v0
        k = 0
        waited = 0.0
        while True:
            ops[k] = v
            best_e = -1
            best_t = start0 + release[v]
            for e in range(indptr[v], indptr[v + 1]):
                u = src[e]
                t = (start[u] if anchor[e] == 0 else end[u]) + lag[e]
                if t > best_t:
                    best_t = t
                    best_e = e
            if start[v] - best_t > tol:
                waited += start[v] - best_t
            edge[k] = best_e
            k += 1
            if best_e < 0:
                return k, waited
            v = src[best_e]

    _BACKTRACK["walk"] = walk
    return walk


def op_category(graph: OpGraph, idx: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """Category code of every op (kernels, memsets, host API calls, sync returns, copies per
    transfer class) and the labels the codes index (those of the critical-path breakdown).
    ``idx``: of those ops only (int16 codes; a table of some ops need not pay 8 B per op of the graph)."""
    return _op_category(graph, idx)


def name_codes(names: list[str]) -> tuple[np.ndarray, list[str]]:
    """``(code per name id, distinct texts)``: ``texts[code[name_id]]`` is an op's name, "" for none (id -1 or
    ``len(names)``). Tables group and label ops by these codes rather than by a text per op; names may repeat
    (a kernel's and an API call's), so the ids themselves are not codes of distinct texts."""
    index: dict[str, int] = {}
    code = np.array([index.setdefault(t, len(index)) for t in [*names, ""]], dtype=np.int32)
    return code, list(index)


def _op_category(graph: OpGraph, idx: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """Category code of every op (of the ops ``idx`` when given) and the labels they index."""
    labels = ["kernels", "memsets", "host: API calls", "host: sync returns"]
    labels += [f"copies: {c.label}" for c in TransferClass]
    labels.append(COLLECTIVES)  # last, so that the other codes keep their values
    kind = graph.ops["kind"] if idx is None else graph.ops["kind"][idx]
    code = np.full(len(kind), 2, np.int64 if idx is None else np.int16)
    kernel = kind == OpKind.KERNEL
    code[kernel] = 0
    code[kind == OpKind.MEMSET] = 1
    code[kind == OpKind.WAIT] = 3
    copy = kind == OpKind.COPY
    tclass = graph.ops["transfer_class"] if idx is None else graph.ops["transfer_class"][idx]
    code[copy] = 4 + tclass[copy]
    by_name = collective_names(graph.names)
    if by_name.any():  # NCCL/RCCL kernels are communication, not compute: their own category
        name_id = graph.ops["name_id"] if idx is None else graph.ops["name_id"][idx]
        code[kernel & by_name[name_id]] = len(labels) - 1
    return code, labels


#: The category of NCCL/RCCL kernels (collectives and send/receive), apart from the compute kernels.
COLLECTIVES = "collectives (NCCL/RCCL)"


def collective_names(names: list[str]) -> np.ndarray:
    """Whether each name (and, last, the id -1 of an op without one) is an NCCL/RCCL kernel's
    (``traces.collectives.parse_kernel_name``); one test per distinct name, not per op."""
    return np.array([("ccl" in n and parse_kernel_name(n) is not None) for n in names] + [False], dtype=bool)


_EDGE_LABELS = {
    EdgeKind.PROGRAM_ORDER: "host: gaps between calls",
    EdgeKind.NESTING: "host: gaps between calls",
    EdgeKind.FLOW: "host: gaps between calls",
    EdgeKind.LAUNCH: "launch latency",
    EdgeKind.RECORDED_OFFSET: "recorded offsets (no API record)",
}


def critical_path(graph: OpGraph, schedule: Schedule, start_s: float = 0.0) -> CriticalPath:
    """Critical path of a replayed schedule (see the module docstring), ending at the last GPU op."""
    gpu = np.flatnonzero(graph.gpu_mask())
    if len(gpu) == 0:
        return CriticalPath(np.zeros(0, np.int32), {})
    v0 = int(gpu[np.argmax(schedule.end_s[gpu])])
    n = len(graph)
    ops = np.empty(n, np.int32)
    # NOTE: int32 edge numbers below 2^31 edges (the walk's buffers hold a whole graph's worth: memory).
    edge = np.empty(n, np.int32 if graph.n_edges < np.iinfo(np.int32).max else np.int64)
    # An op that waited for a free copy engine or kernel slot (event path) started after what its edge allows.
    tol = 1e-12 * max(abs(float(schedule.end_s[v0])), 1.0)
    k, unit_wait = _kernel()(np.int64(v0), graph.indptr, graph.src, graph.anchor, graph.lag_s,
                             graph.ops["release_s"], schedule.start_s, schedule.end_s, np.float64(start_s), ops, edge,
                             np.float64(tol))
    ops, edge = ops[:k].copy(), edge[:k].copy()  # NOTE: frees the whole-graph buffers
    op_time = schedule.end_s[ops] - schedule.start_s[ops]
    # An op counts in full unless the path left it from its start.
    op_time[1:][graph.anchor[edge[:-1]] != Anchor.END] = 0.0
    code, labels = _op_category(graph, ops)
    sums = np.bincount(code, weights=op_time, minlength=len(labels))
    del code
    breakdown = {labels[i]: float(sums[i]) for i in np.flatnonzero(sums)}
    on_edges = edge[edge >= 0]
    lag_sums = np.bincount(graph.kind[on_edges].astype(np.int64), weights=graph.lag_s[on_edges],
                           minlength=len(EdgeKind))
    for kind_value in np.flatnonzero(lag_sums):
        # Lags on GPU-side edges (stream, engine, event, legacy-stream, graph order) are the calibrated
        # GPU dependency latency: they lengthen the path like any other lag.
        label = _EDGE_LABELS.get(EdgeKind(int(kind_value)), "GPU dependency latency")
        breakdown[label] = breakdown.get(label, 0.0) + float(lag_sums[kind_value])
    if unit_wait:
        breakdown["waits for a copy engine or kernel slot"] = float(unit_wait)
    last = int(ops[-1])
    rel = float(graph.ops["release_s"][last])
    if rel:
        label = "host: before the first call" if graph.ops["kind"][last] >= OpKind.API else \
            "recorded offsets (no API record)"
        breakdown[label] = breakdown.get(label, 0.0) + rel
    return CriticalPath(ops, breakdown, op_time)


def slack_s(graph: OpGraph, schedule: Schedule, start_s: float = 0.0) -> np.ndarray:
    """How much later each op started than its in-edges and release allow under ``schedule``, s.

    Zero for every op of a replayed schedule. On the measured schedule a
    positive slack is a wait the graph does not explain (work the trace does
    not record, a late launch): the diagnostic of a fidelity miss.
    """
    n = len(graph)
    allowed = start_s + graph.ops["release_s"].copy()
    if graph.n_edges:
        t = np.where(graph.anchor == Anchor.START, schedule.start_s[graph.src], schedule.end_s[graph.src])
        t += graph.lag_s
        has = np.flatnonzero(np.diff(graph.indptr) > 0)
        allowed[has] = np.maximum(allowed[has], np.maximum.reduceat(t, graph.indptr[has]))
    return schedule.start_s - allowed if n else np.zeros(0)


def summary(graph: OpGraph, schedule: Schedule) -> dict[str, Any]:
    """End-to-end, GPU-busy and GPU time per device, and the critical-path breakdown of a schedule."""
    dur = schedule.end_s - schedule.start_s
    cp = critical_path(graph, schedule)
    return {
        "end_to_end_s": end_to_end_s(graph, schedule),
        "gpu_busy_s": gpu_busy_s(graph, schedule),
        "gpu_time_s": gpu_time_s(graph, dur),
        "critical_path_s": cp.breakdown_s,
    }
