"""ApiCalls: a columnar table of the host side of a GPU program.

One row per host-side record a profiler kept: CUDA/HIP runtime and driver API
calls, and (Kineto) the CPU operator and annotation spans that enclose them.
Columns are numpy arrays (``COLUMNS``), rows sorted by (thread, start, longer
first), so that an enclosing span comes before what it encloses. Timestamps
are the profiler's integer nanoseconds, on the same clock as the Trace's GPU
timestamps. Names are interned (``name_id`` indexes ``ApiCalls.names``).

Example (three calls of one thread; stream and event come from the
profiler's synchronization and event tables, -1 where it has none)::

    start_ns end_ns  process thread correlation name            domain  stream event
    1000     1500    42      42     7           cudaLaunchKernel RUNTIME -1     -1
    1600     1700    42      42     8           cudaEventRecord  RUNTIME 13     1
    1800     9000    42      42     9           cudaStreamSynchronize RUNTIME 13 -1

``call_kind`` classifies every name into what the graph builder needs to know
(``ApiKind``): launches, copies, memsets, the synchronizing calls, event
records and waits. The rules follow the CUDA runtime documentation, section
"API synchronization behavior" (docs.nvidia.com/cuda/cuda-runtime-api/
api-sync-behavior.html) and the per-function pages; HIP names (``hip*``) map
to the same kinds as their CUDA counterparts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

#: A timestamp the profiler did not record.
MISSING_NS = np.iinfo(np.int64).min


class Domain(IntEnum):
    """Where a host record comes from."""

    RUNTIME = 0  # CUDA runtime API (cuda*) or HIP (hip*)
    DRIVER = 1  # CUDA driver API (cu*)
    CPU_OP = 2  # a framework span (Kineto cpu_op, user_annotation): host work enclosing calls


class ApiKind(IntEnum):
    """What a call means for the dependency graph (see the module docstring)."""

    OTHER = 0  # host work only (allocation, queries, configuration)
    LAUNCH = 1  # kernel launch (cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch...)
    MEMCPY = 2  # synchronous copy call (cudaMemcpy*, cuMemcpy* without Async)
    MEMCPY_ASYNC = 3  # asynchronous copy call (blocks only for pageable/managed host memory)
    MEMSET = 4  # synchronous memset call (blocks only for pinned host memory)
    MEMSET_ASYNC = 5
    DEVICE_SYNC = 6  # cudaDeviceSynchronize, cudaThreadSynchronize, cuCtxSynchronize
    STREAM_SYNC = 7  # cudaStreamSynchronize, cuStreamSynchronize
    EVENT_SYNC = 8  # cudaEventSynchronize, cuEventSynchronize
    EVENT_RECORD = 9  # cudaEventRecord, cuEventRecord
    STREAM_WAIT_EVENT = 10  # cudaStreamWaitEvent, cuStreamWaitEvent
    FREE_SYNC = 11  # cudaFree, cudaFreeHost, cuMemFree...: synchronise the device
    PREFETCH = 12  # cudaMemPrefetchAsync: launches unified-memory migrations


#: Column name -> dtype. Every ApiCalls has exactly these columns, all of one length.
COLUMNS: dict[str, np.dtype[Any]] = {
    "start_ns": np.dtype(np.int64),
    "end_ns": np.dtype(np.int64),
    "process": np.dtype(np.int64),
    "thread": np.dtype(np.int64),  # profiler's thread id (nsys globalTid, nvprof threadId, Kineto tid)
    "correlation": np.dtype(np.int64),  # joins GPU ops (Trace.correlation); -1 for CPU spans
    "name_id": np.dtype(np.int32),
    "domain": np.dtype(np.int8),  # Domain
    "stream": np.dtype(np.int64),  # stream synchronized / recorded on / made to wait; -1 unknown
    "event": np.dtype(np.int64),  # event recorded / synchronized / waited on; -1 none
    "device": np.dtype(np.int16),  # device of a synchronization record; -1 unknown
}

_DEFAULTS = {"stream": -1, "event": -1, "device": -1, "correlation": -1, "process": 0, "thread": 0,
             "name_id": -1, "domain": Domain.RUNTIME}


@dataclass
class ApiMeta:
    """Where the records came from, and what the reader assumed (``notes``).

    ``null_streams``: legacy default (NULL) stream id per device, where the
    profiler recorded it. ``stream_flags``: stream id -> "blocking" or
    "non-blocking" for streams whose creation flags the profiler recorded.
    ``copy_engines``: asynchronous copy engines per device (nsys
    TARGET_INFO_GPU.asyncEngines, nvprof CUPTI_ACTIVITY_KIND_DEVICE.numMemcpyEngines).
    ``host_flows``: cross-thread host dependencies (Kineto ``fwdbwd`` flows), an
    (n, 4) int64 array of (source thread, source start ns, destination thread,
    destination start ns).
    """

    source: str = ""
    format: str = ""
    null_streams: dict[int, int] = field(default_factory=dict)
    stream_flags: dict[int, str] = field(default_factory=dict)
    copy_engines: dict[int, int] = field(default_factory=dict)
    host_flows: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), dtype=np.int64))
    notes: list[str] = field(default_factory=list)


class ApiCalls:
    """Host records of one trace, columnar (see the module docstring)."""

    __slots__ = ("_cols", "meta", "names")

    def __init__(self, columns: dict[str, np.ndarray], names: list[str], meta: ApiMeta) -> None:
        self._cols = columns
        self.names = names
        self.meta = meta

    @classmethod
    def from_columns(cls, columns: dict[str, Any], names: list[str], meta: ApiMeta | None = None) -> ApiCalls:
        """Cast to ``COLUMNS`` dtypes, fill defaults and sort by (thread, start, end descending).

        ``columns`` must hold ``start_ns`` and ``end_ns``.
        """
        unknown = set(columns) - set(COLUMNS)
        if unknown:
            msg = f"unknown API columns: {sorted(unknown)}"
            raise ValueError(msg)
        n = len(columns["start_ns"])
        cols: dict[str, np.ndarray] = {}
        for name, dtype in COLUMNS.items():
            if name in columns:
                arr = np.asarray(columns[name])
                if arr.shape != (n,):
                    msg = f"API column {name!r} has shape {arr.shape}, expected ({n},)"
                    raise ValueError(msg)
                cols[name] = arr.astype(dtype, copy=False)
            elif name in ("start_ns", "end_ns"):
                msg = f"API column {name!r} is required"
                raise ValueError(msg)
            else:
                cols[name] = np.full(n, _DEFAULTS[name], dtype=dtype)
        if n > 1:
            # Enclosing spans first at equal starts: they end later.
            order = np.lexsort((-cols["end_ns"], cols["start_ns"], cols["thread"]))
            if np.any(order[1:] < order[:-1]):
                cols = {k: v[order] for k, v in cols.items()}
        return cls(cols, list(names), meta or ApiMeta())

    @classmethod
    def empty(cls, meta: ApiMeta | None = None) -> ApiCalls:
        """A table without rows (a trace format without API records)."""
        return cls.from_columns({"start_ns": np.zeros(0, np.int64), "end_ns": np.zeros(0, np.int64)}, [], meta)

    def __len__(self) -> int:
        return len(self._cols["start_ns"])

    def __getitem__(self, column: str) -> np.ndarray:
        return self._cols[column]

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The column arrays (do not modify in place)."""
        return self._cols

    def kinds(self) -> np.ndarray:
        """ApiKind (int8) of every row; CPU spans are OTHER."""
        table = np.array([call_kind(n) for n in self.names] + [ApiKind.OTHER], dtype=np.int8)
        kinds = table[self._cols["name_id"]]  # -1 reads the trailing OTHER
        kinds[self._cols["domain"] == Domain.CPU_OP] = ApiKind.OTHER
        return kinds

    def __repr__(self) -> str:
        return f"ApiCalls({len(self)} records; source={self.meta.source!r})"


# -- names -> ApiKind ---------------------------------------------------------------------

_VERSION = re.compile(r"(_v\d+)+$")  # nsys: cudaMemcpy_v3020; driver: cuMemcpyHtoD_v2
_PER_THREAD = re.compile(r"_(ptsz|ptds)$")


def base_name(name: str) -> str:
    """``cudaMemcpyAsync_ptsz_v7000`` -> ``cudaMemcpyAsync``: the function without ABI suffixes."""
    out = _VERSION.sub("", name)
    out = _PER_THREAD.sub("", out)
    return _VERSION.sub("", out)


_EXACT = {
    # kernel launches
    "cudaLaunch": ApiKind.LAUNCH, "cudaLaunchKernel": ApiKind.LAUNCH, "cudaLaunchKernelExC": ApiKind.LAUNCH,
    "cudaLaunchCooperativeKernel": ApiKind.LAUNCH, "cudaLaunchCooperativeKernelMultiDevice": ApiKind.LAUNCH,
    "cudaGraphLaunch": ApiKind.LAUNCH, "cuLaunchKernel": ApiKind.LAUNCH, "cuLaunchKernelEx": ApiKind.LAUNCH,
    "cuLaunch": ApiKind.LAUNCH, "cuLaunchGrid": ApiKind.LAUNCH, "cuLaunchGridAsync": ApiKind.LAUNCH,
    "cuLaunchCooperativeKernel": ApiKind.LAUNCH, "cuGraphLaunch": ApiKind.LAUNCH,
    "hipLaunchKernel": ApiKind.LAUNCH, "hipExtModuleLaunchKernel": ApiKind.LAUNCH,
    "hipModuleLaunchKernel": ApiKind.LAUNCH, "hipExtLaunchKernel": ApiKind.LAUNCH,
    "hipGraphLaunch": ApiKind.LAUNCH, "hipLaunchCooperativeKernel": ApiKind.LAUNCH,
    # synchronization
    "cudaDeviceSynchronize": ApiKind.DEVICE_SYNC, "cudaThreadSynchronize": ApiKind.DEVICE_SYNC,
    "cuCtxSynchronize": ApiKind.DEVICE_SYNC, "hipDeviceSynchronize": ApiKind.DEVICE_SYNC,
    "cudaStreamSynchronize": ApiKind.STREAM_SYNC, "cuStreamSynchronize": ApiKind.STREAM_SYNC,
    "hipStreamSynchronize": ApiKind.STREAM_SYNC,
    "cudaEventSynchronize": ApiKind.EVENT_SYNC, "cuEventSynchronize": ApiKind.EVENT_SYNC,
    "hipEventSynchronize": ApiKind.EVENT_SYNC,
    "cudaEventRecord": ApiKind.EVENT_RECORD, "cudaEventRecordWithFlags": ApiKind.EVENT_RECORD,
    "cuEventRecord": ApiKind.EVENT_RECORD, "cuEventRecordWithFlags": ApiKind.EVENT_RECORD,
    "hipEventRecord": ApiKind.EVENT_RECORD,
    "cudaStreamWaitEvent": ApiKind.STREAM_WAIT_EVENT, "cuStreamWaitEvent": ApiKind.STREAM_WAIT_EVENT,
    "hipStreamWaitEvent": ApiKind.STREAM_WAIT_EVENT,
    # frees that synchronise the device (see FREE_SYNC)
    "cudaFree": ApiKind.FREE_SYNC, "cudaFreeHost": ApiKind.FREE_SYNC, "cudaFreeArray": ApiKind.FREE_SYNC,
    "cudaFreeMipmappedArray": ApiKind.FREE_SYNC, "cuMemFree": ApiKind.FREE_SYNC,
    "cuMemFreeHost": ApiKind.FREE_SYNC, "cuArrayDestroy": ApiKind.FREE_SYNC,
    "hipFree": ApiKind.FREE_SYNC, "hipHostFree": ApiKind.FREE_SYNC,
    "cudaMemPrefetchAsync": ApiKind.PREFETCH, "cuMemPrefetchAsync": ApiKind.PREFETCH,
}


def call_kind(name: str) -> ApiKind:
    """ApiKind of a runtime/driver function name (any ABI suffix); OTHER when none applies.

    Copy calls are ``MEMCPY`` or ``MEMCPY_ASYNC`` by the ``Async`` in their
    name; whether one blocks the host is decided per call by the builder
    from the memory kinds of the copy it launched. ``cudaMemcpyToSymbol``
    and friends are copies; ``cudaMemGetInfo`` is not.
    """
    base = base_name(name)
    kind = _EXACT.get(base)
    if kind is not None:
        return kind
    lower = base.lower()
    for prefix in ("cudamemcpy", "cumemcpy", "hipmemcpy"):
        if lower.startswith(prefix):
            return ApiKind.MEMCPY_ASYNC if "async" in lower else ApiKind.MEMCPY
    for prefix in ("cudamemset", "cumemset", "hipmemset"):
        if lower.startswith(prefix):
            return ApiKind.MEMSET_ASYNC if "async" in lower else ApiKind.MEMSET
    return ApiKind.OTHER
