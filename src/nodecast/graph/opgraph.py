"""OpGraph: the operations of a GPU program and what each waits for, columnar.

Ops (numpy columns, one row per op; ``OP_COLUMNS``):

===============  =========  ============================================================
column           dtype      meaning
===============  =========  ============================================================
kind             int8       ``OpKind`` (``traces.kinds``, one vocabulary with the Trace's):
                            KERNEL, COPY, MEMSET (GPU work), API (a host call or span),
                            WAIT (the return of a blocking call); never SYNC
device           int16      GPU index; -1 for host ops, and for tasks whose placement is open
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

Task graphs (the simulator's Cholesky, LU and DAG files, ``nodecast.graph.taskgraph``)
are OpGraphs too: one KERNEL op per task, ``device`` -1 ("open": the
simulator's scheduler places it; a recorded device >= 0 is what a trace
replay keeps), edges of kind DATA (StarPU's implicit dependencies) and
TASK_DEP (explicit ones), all from END with lag 0. What only tasks have is in
``TASK_COLUMNS`` (extra op columns) and in ``OpGraph.tasks`` (a ``TaskData``:
the data handles the tasks access, as CSR, their sizes, the successor lists in
the order the dependencies were declared, and StarPU's eviction hints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from nodecast.traces.kinds import OpKind

#: GPU op kinds (the ones GPU-busy time and end-to-end time count).
GPU_KINDS = (OpKind.KERNEL, OpKind.COPY, OpKind.MEMSET)
#: The graph's kinds as its outputs name them (ops tables, Chrome traces, counts, notes), in the order of the
#: codes those files store: a copy is "copy" there (a Trace's tables say "memcpy"), and API and WAIT keep the
#: codes 3 and 4 they had when the graph had an enum of its own, so that files written before read the same.
KIND_LABELS = ("kernel", "copy", "memset", "api", "wait")
_KIND_OF_LABEL = (OpKind.KERNEL, OpKind.COPY, OpKind.MEMSET, OpKind.API, OpKind.WAIT)
#: Stored code (index into KIND_LABELS) of each OpKind code; -1 for SYNC, which no graph op has.
_STORED_CODE = np.full(max(OpKind) + 1, -1, np.int8)
_STORED_CODE[list(_KIND_OF_LABEL)] = np.arange(len(_KIND_OF_LABEL))


def kind_label(kind: int) -> str:
    """The output name of an op kind (``kernel``, ``copy``, ``memset``, ``api``, ``wait``)."""
    return KIND_LABELS[_STORED_CODE[int(kind)]]


def kind_codes(kinds: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(stored codes, ``KIND_LABELS``) of op kinds, as a categorical column of an output file takes them
    (``pd.Categorical.from_codes(*kind_codes(kinds))``)."""
    return _STORED_CODE[kinds], list(KIND_LABELS)


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
    DATA = 11  # a task accesses data an earlier task wrote, or writes data earlier tasks read (StarPU's implicit deps)
    TASK_DEP = 12  # an explicit dependency between tasks (a DAG file's "deps")


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


#: Extra op columns of a task graph (name -> dtype); present only when ``OpGraph.tasks`` is set.
TASK_COLUMNS: dict[str, np.dtype[Any]] = {
    "kernel_id": np.dtype(np.int32),  # index into TaskData.kernels (the performance model's symbol)
    "priority": np.dtype(np.int32),  # StarPU priority, higher runs first
    "footprint": np.dtype(np.int64),  # StarPU footprint hash (32 bits), -1 when none is given
    "async": np.dtype(np.bool_),  # a GPU may queue the kernel while the previous one runs
    "size_bytes": np.dtype(np.int64),  # the size that selects the performance model's entry, bytes
}

#: Access modes of ``TaskData.access_mode`` (bit flags, as StarPU's STARPU_R / STARPU_W / STARPU_RW).
ACCESS_R, ACCESS_W, ACCESS_RW = 1, 2, 3


@dataclass
class TaskData:
    """What a task graph adds to its ops: the data handles its tasks access, and how they were submitted.

    Handles: ``data_names`` and ``data_bytes`` (int64, bytes). Accesses of
    task ``t``: ``access_handle[access_ptr[t]:access_ptr[t+1]]`` (int32
    handle ids) with ``access_mode`` (int8, ``ACCESS_R``/``W``/``RW``), in the
    order the task names them. Successors of ``t``:
    ``succ[succ_ptr[t]:succ_ptr[t+1]]`` (int32), in the order the
    dependencies were declared: a runtime releases them in that order.
    ``wont_use_task``/``wont_use_handle`` (int32): after submitting task
    ``wont_use_task[i]``, the application called StarPU's
    ``starpu_data_wont_use(wont_use_handle[i])``, in the order they were made.
    ``nominal_flops``: the application's operation count when it states
    one (else the sum of the tasks' FLOPs counts).
    """

    name: str
    kernels: list[str]
    data_names: list[str]
    data_bytes: np.ndarray
    access_ptr: np.ndarray
    access_handle: np.ndarray
    access_mode: np.ndarray
    succ_ptr: np.ndarray
    succ: np.ndarray
    wont_use_task: np.ndarray
    wont_use_handle: np.ndarray
    nominal_flops: float | None = None
    #: (handles, modes, successors) per task as tuples and lists, made on first use
    #: (or handed over by the builder); the arrays above are the data, this is a view.
    runtime_lists: tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[list[int]]] | None = field(
        default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        # NOTE: the list view is rebuilt where it is used, not shipped (Dask sends graphs to workers).
        return {**self.__dict__, "runtime_lists": None}

    def as_lists(self) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[list[int]]]:
        """Per task: the handles (tuple), the modes (tuple) and the successors (list), as Python ints.

        A simulator walks these tens of thousands of times per run; they are
        made once from the arrays (and kept), or handed over by the builder
        that made them. Treat both as read-only.
        """
        if self.runtime_lists is None:
            ptr, hs, ms = self.access_ptr.tolist(), self.access_handle.tolist(), self.access_mode.tolist()
            bounds = list(zip(ptr[:-1], ptr[1:]))
            sp, sc = self.succ_ptr.tolist(), self.succ.tolist()
            self.runtime_lists = ([tuple(hs[a:b]) for a, b in bounds], [tuple(ms[a:b]) for a, b in bounds],
                                  [sc[a:b] for a, b in zip(sp[:-1], sp[1:])])
        return self.runtime_lists

    @property
    def n_data(self) -> int:
        """Number of data handles."""
        return len(self.data_names)

    def accesses(self, t: int) -> list[tuple[int, int]]:
        """The (handle, mode) pairs task ``t`` accesses, in its order."""
        lo, hi = int(self.access_ptr[t]), int(self.access_ptr[t + 1])
        return list(zip(self.access_handle[lo:hi].tolist(), self.access_mode[lo:hi].tolist(), strict=True))

    def succs(self, t: int) -> list[int]:
        """Tasks that wait for task ``t``, in declaration order."""
        return self.succ[int(self.succ_ptr[t]):int(self.succ_ptr[t + 1])].tolist()

    def wont_use(self) -> list[tuple[int, int]]:
        """The eviction hints as (task, handle) pairs, in the order they were made."""
        return list(zip(self.wont_use_task.tolist(), self.wont_use_handle.tolist(), strict=True))

    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(sum(a.nbytes for a in (self.data_bytes, self.access_ptr, self.access_handle, self.access_mode,
                                          self.succ_ptr, self.succ, self.wont_use_task, self.wont_use_handle)))


@dataclass
class OpGraph:
    """Ops and CSR in-edges (see the module docstring); build one with ``build.build_graph``.

    ``params`` records the calibrated values the builder used (launch
    latency per op class in seconds, copy engines per device); ``notes``
    every assumption it made. ``tasks`` is set on task graphs only (see the
    module docstring; ``ops`` then also holds ``TASK_COLUMNS``).
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
    tasks: TaskData | None = None

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

    def preds(self, v: int) -> list[int]:
        """The ops ``v`` waits for (sources of its in-edges, in CSR order)."""
        return self.src[int(self.indptr[v]):int(self.indptr[v + 1])].tolist()

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
        return int(sum(a.nbytes for a in arrays)) + (self.tasks.nbytes() if self.tasks is not None else 0)

    def counts(self) -> dict[str, int]:
        """Number of ops per OpKind and edges per EdgeKind (``op:kernel``, ``edge:launch``...)."""
        out = {}
        for k, c in zip(*np.unique(self.ops["kind"], return_counts=True), strict=True):
            out[f"op:{kind_label(k)}"] = int(c)
        for k, c in zip(*np.unique(self.kind, return_counts=True), strict=True):
            out[f"edge:{EdgeKind(int(k)).name.lower()}"] = int(c)
        return out

    def __repr__(self) -> str:
        return f"OpGraph({len(self):,} ops, {self.n_edges:,} edges; source={self.source!r})"
