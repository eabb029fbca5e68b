"""OpGraph: the operations of a GPU program and what each waits for, columnar.

Ops (numpy columns, one row per op; ``OP_COLUMNS``):

===============  =========  ============================================================
column           dtype      meaning
===============  =========  ============================================================
kind             int8       ``OpKind``: KERNEL, COPY, MEMSET (GPU work), API (a host call
                            or span), WAIT (the return of a blocking call)
device           int16      GPU index; -1 for host ops (and "open placement" later)
queue            int64      stream id for GPU ops, host thread id for host ops
engine           int8       ``Engine`` of a copy (HTOD, DTOH, DTOD, PEER, HTOH), else NONE
thread           int64      host thread of the op's API call (-1 if none)
bytes            int64      bytes copied or set; 0 for kernels and host ops
flops            float64    floating-point operations where known, else NaN
transfer_class   int8       ``traces.kinds.TransferClass`` (NOT_A_TRANSFER for non-copies)
name_id          int32      index into ``OpGraph.names`` (-1: none)
trace_row        int32      row in the source Trace (GPU ops), ApiCalls row (host ops), -1
source_dur_s     float64    measured duration on the source, seconds
release_s        float64    earliest start, seconds after the graph's origin (thread starts)
===============  =========  ============================================================

Edges are stored by destination (CSR): the in-edges of op ``v`` are
``indptr[v]:indptr[v+1]`` of ``src`` (int32 op index), ``kind`` (``EdgeKind``),
``anchor`` (``Anchor``: the edge counts from src's START or END) and ``lag_s``
(float64 seconds). Semantics, for every edge (u -> v):

    start[v] >= (start[u] if anchor == START else end[u]) + lag_s        (1)

and start[v] >= origin + release_s[v]. ``build.py`` documents where each edge
comes from; ``order`` is a topological order (Kahn's algorithm) computed once
when the graph is made, and a cycle is refused there.

Times are float64 seconds relative to ``origin_ns`` (the trace's first
timestamp, integer ns): absolute Kineto timestamps (1.7e15 ns) would lose
sub-microsecond precision in float64.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np


class OpKind(IntEnum):
    """What an op of the graph is."""

    KERNEL = 0
    COPY = 1
    MEMSET = 2
    API = 3  # a host runtime/driver call, or a framework span enclosing calls
    WAIT = 4  # the return of a blocking call: ends after what it waits for


#: GPU op kinds (the ones GPU-busy time and end-to-end time count).
GPU_KINDS = (OpKind.KERNEL, OpKind.COPY, OpKind.MEMSET)


class Engine(IntEnum):
    """Which copy engine class serves a copy on its device."""

    NONE = 0
    HTOD = 1
    DTOH = 2
    DTOD = 3
    PEER = 4
    HTOH = 5


class EdgeKind(IntEnum):
    """Why an op waits for another (see build.py for the sources of each)."""

    STREAM_ORDER = 0  # ops of one (device, stream) run in issue order
    PROGRAM_ORDER = 1  # a host thread's calls run in order; lag = measured host gap between them
    LAUNCH = 2  # a GPU op starts after its API call's start + launch latency (lag)
    SYNC = 3  # a blocking call's WAIT ends after the GPU ops it waits for
    EVENT_WAIT = 4  # cudaStreamWaitEvent: the waiting stream's next op after the recorded work
    ENGINE_ORDER = 5  # copies of one direction on one device share one copy engine, in recorded order
    DEFAULT_STREAM = 6  # legacy default stream implicit synchronisation with blocking streams
    FLOW = 7  # Kineto flow between host spans of different threads (fwdbwd: backward after forward)
    NESTING = 8  # a host span starts inside the span that encloses it (lag from its start)
    RECORDED_OFFSET = 9  # fallback for a GPU op without API record: recorded offset from the previous GPU op
    GRAPH_ORDER = 10  # ops of one CUDA graph launch run in recorded order (the graph's edges are not traced)


class Anchor(IntEnum):
    """Which end of the source op an edge counts from."""

    START = 0
    END = 1


#: Column name -> dtype of the op table.
OP_COLUMNS: dict[str, np.dtype[Any]] = {
    "kind": np.dtype(np.int8),
    "device": np.dtype(np.int16),
    "queue": np.dtype(np.int64),
    "engine": np.dtype(np.int8),
    "thread": np.dtype(np.int64),
    "bytes": np.dtype(np.int64),
    "flops": np.dtype(np.float64),
    "transfer_class": np.dtype(np.int8),
    "name_id": np.dtype(np.int32),
    "trace_row": np.dtype(np.int32),
    "source_dur_s": np.dtype(np.float64),
    "release_s": np.dtype(np.float64),
}


@dataclass
class OpGraph:
    """Ops and CSR in-edges (see the module docstring); build one with ``build.build_graph``.

    ``params`` records the calibrated values the builder used (launch
    latency per op class in seconds, copy engines per device); ``notes``
    every assumption it made.
    """

    ops: dict[str, np.ndarray]
    indptr: np.ndarray  # int64, len n + 1
    src: np.ndarray  # int32
    kind: np.ndarray  # int8 EdgeKind
    anchor: np.ndarray  # int8 Anchor
    lag_s: np.ndarray  # float64
    order: np.ndarray  # int32 topological order
    names: list[str]
    origin_ns: int
    source: str = ""
    format: str = ""
    gpus: dict[int, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ops["kind"])

    @property
    def n_edges(self) -> int:
        """Number of edges."""
        return len(self.src)

    def source_durations(self) -> np.ndarray:
        """Measured duration of every op, seconds (a copy: replay may not modify it)."""
        return self.ops["source_dur_s"].copy()

    def gpu_mask(self) -> np.ndarray:
        """Boolean mask of GPU ops (kernels, copies, memsets)."""
        return self.ops["kind"] <= OpKind.MEMSET

    def in_edges(self, v: int) -> dict[str, np.ndarray]:
        """The in-edges of op ``v`` (for inspection and tests)."""
        lo, hi = int(self.indptr[v]), int(self.indptr[v + 1])
        return {"src": self.src[lo:hi], "kind": self.kind[lo:hi], "anchor": self.anchor[lo:hi],
                "lag_s": self.lag_s[lo:hi]}

    def edge_dst(self) -> np.ndarray:
        """Destination op of every edge (int32; expanded from ``indptr``)."""
        return np.repeat(np.arange(len(self), dtype=np.int32), np.diff(self.indptr))

    def nbytes(self) -> int:
        """Bytes held by the graph's arrays."""
        arrays = [*self.ops.values(), self.indptr, self.src, self.kind, self.anchor, self.lag_s, self.order]
        return int(sum(a.nbytes for a in arrays))

    def counts(self) -> dict[str, int]:
        """Number of ops per OpKind and edges per EdgeKind (``op:kernel``, ``edge:launch``...)."""
        out = {}
        for k, c in zip(*np.unique(self.ops["kind"], return_counts=True), strict=True):
            out[f"op:{OpKind(int(k)).name.lower()}"] = int(c)
        for k, c in zip(*np.unique(self.kind, return_counts=True), strict=True):
            out[f"edge:{EdgeKind(int(k)).name.lower()}"] = int(c)
        return out

    def __repr__(self) -> str:
        return f"OpGraph({len(self):,} ops, {self.n_edges:,} edges; source={self.source!r})"
