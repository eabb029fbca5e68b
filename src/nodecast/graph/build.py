"""Trace + ApiCalls -> OpGraph: the dependency edges of a recorded GPU program.

Ops: every GPU op of the Trace except synchronization records (kernels,
copies, memsets), one API op per host record, and one WAIT op per blocking
call. Edges (``EdgeKind``), each with its source:

STREAM_ORDER
    Consecutive ops of one (device, stream), in recorded order: "operations
    within a stream are executed in order" (CUDA programming guide,
    Streams). Unified-memory page migrations (copy kinds UVM_*) are made by
    the driver on page faults, not issued to a stream, and are not chained.
PROGRAM_ORDER, NESTING
    A host thread's records in start order (enclosing spans first). The next
    record starts ``lag`` after the previous one's return (END anchor; the lag
    is the measured host gap, the host work between the calls), or, when it
    starts inside the previous record (a call inside a Kineto ``cpu_op``, a
    driver call inside a runtime call), ``lag`` after that record's start
    (START anchor, kind NESTING). Each thread's first record is released at
    its measured offset from the trace's first timestamp.
LAUNCH
    A GPU op starts no earlier than its API call (joined by correlation id)
    plus a launch latency. The latency is a per-trace calibration, never the
    op's own recorded start: the median, over ops whose stream was idle when
    they were launched, of (GPU start - call end) for non-blocking calls and
    (GPU start - call start) for blocking ones, per op class (kernel, memset,
    each transfer class); counted from the call's end (the API op of a
    blocking call has zero length, see WAIT). Anchoring at the call's end
    keeps a kernel whose launch call loads its module lazily (tens of ms)
    from starting before the call returns.
SYNC (WAIT ops)
    A blocking call becomes an API op and a WAIT op; the WAIT depends on the
    GPU ops the call waits for, and the thread's next record follows the
    WAIT. Which calls block and on what, per the CUDA runtime API
    documentation, "API synchronization behavior" and the function pages:
    cudaDeviceSynchronize / cudaThreadSynchronize / cuCtxSynchronize (every
    stream of the device), cudaStreamSynchronize (the stream named by the
    sync record), cudaEventSynchronize (the work captured by the event's
    latest record), synchronous copies except device-to-device ("for
    transfers from device memory to device memory, no host-side
    synchronization is performed"), asynchronous copies to or from pageable
    or managed memory and host-to-host copies ("might be synchronous with
    respect to host"; taken as blocking), synchronous memsets of pinned host
    memory, and cudaFree / cudaFreeHost / cuMemFree ("this API may perform
    implicit synchronization", CUDA driver API cuMemFree; taken as a device
    synchronisation). "All earlier-launched ops" means ops whose API call
    started before the blocking call. Durations: the API op lasts the whole
    call when it waited for nothing (the awaited work had ended); otherwise
    it has zero length and the WAIT carries the measured time from the end
    of the awaited work to the call's return (the return path), so that the
    same durations reproduce the call's end.
EVENT_WAIT
    cudaStreamWaitEvent (nsys/nvprof SYNCHRONIZATION record with the waiting
    stream and event; Kineto ``cuda_sync`` "Stream Wait Event" with
    ``wait_on_cuda_event_record_corr_id``): the first op launched on the
    waiting stream after the call waits for the last op launched on the
    recorded stream before the event's latest cudaEventRecord (its stream
    from nsys/nvprof CUDA_EVENT). An event never recorded is complete: no
    edge, as in CUDA, with a note.
ENGINE_ORDER
    Copies of one direction on one device run one after the other in
    recorded order when the GPU has one copy engine per direction (builder
    parameter ``copy_engines_per_direction``, default 1; with one
    asynchronous engine in all, nsys TARGET_INFO_GPU.asyncEngines or nvprof
    numMemcpyEngines = 1, host-to-device and device-to-host copies share it).
    Device-to-device copies and page migrations are not chained.
DEFAULT_STREAM
    The legacy default stream "first waits on all blocking streams, the
    action is queued in the legacy stream, and then all blocking streams
    wait on the legacy stream" (CUDA runtime API, "Stream synchronization
    behavior"): an op on the legacy stream waits for the last op launched
    before it on every blocking stream of its device, and an op on a
    blocking stream for the last op launched before it on the legacy stream.
    The legacy stream and the stream flags come from nsys
    TARGET_INFO_CUDA_NULL_STREAM / TARGET_INFO_CUDA_STREAM.flag and nvprof
    CONTEXT.nullStreamId / STREAM.flag; a stream without a recorded flag is
    taken as blocking (cudaStreamCreate's default), and Kineto traces (no
    flags) get no implicit synchronisation (a note says so).
FLOW
    Kineto ``fwdbwd`` flows: a backward op (autograd thread) runs after its
    forward op (another thread), lag = the measured gap.
GRAPH_ORDER
    The GPU ops of one call that launches several (cudaGraphLaunch) run in
    recorded order: traces do not record a CUDA graph's own edges.
    Consecutive ops whose recorded intervals overlap are taken as concurrent.
RECORDED_OFFSET
    Documented fallback for GPU ops without an API record (nvprof GPU-trace
    CSV, ops launched before the profile window, page migrations): the op
    starts at its recorded offset from the previous GPU op of its device
    (from its start if they overlap, else from its end: the gap is taken as
    host time). The fidelity of such ops is by construction; the graph's
    notes count them.

Every assumption is a note on the OpGraph. Timestamps are integer ns in the
inputs; the graph holds float64 seconds relative to its origin.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from nodecast.errors import InputError
from nodecast.traces.api import ApiCalls, ApiKind, Domain
from nodecast.graph.opgraph import Anchor, EdgeKind, Engine, OpGraph, OpKind
from nodecast.graph.order import csr_positions, topological_order
from nodecast.notes import NO_API, Note
from nodecast.traces.kinds import CopyKind, MemKind, TransferClass
from nodecast.traces.kinds import OpKind as TraceKind
from nodecast.traces.trace import Trace

_NS = 1e-9

_ENGINE_OF_COPY = np.zeros(len(CopyKind), dtype=np.int8)
_ENGINE_OF_COPY[CopyKind.HTOD] = Engine.HTOD
_ENGINE_OF_COPY[CopyKind.DTOH] = Engine.DTOH
_ENGINE_OF_COPY[CopyKind.DTOD] = Engine.DTOD
_ENGINE_OF_COPY[CopyKind.PEER] = Engine.PEER
_ENGINE_OF_COPY[CopyKind.HTOH] = Engine.HTOH
_ENGINE_OF_COPY[CopyKind.UVM_HTOD] = Engine.HTOD
_ENGINE_OF_COPY[CopyKind.UVM_DTOH] = Engine.DTOH
_ENGINE_OF_COPY[CopyKind.UVM_DTOD] = Engine.DTOD

_UVM = (CopyKind.UVM_HTOD, CopyKind.UVM_DTOH, CopyKind.UVM_DTOD)
#: Asynchronous copies that block the host (pageable or managed host memory, host-to-host; host memory of a kind
#: the trace does not record counts as pageable, as the transfer models take it).
_BLOCKING_ASYNC = (TransferClass.HTOD_PAGEABLE, TransferClass.DTOH_PAGEABLE, TransferClass.HTOD_MANAGED,
                   TransferClass.DTOH_MANAGED, TransferClass.HTOH, TransferClass.HTOD_UNKNOWN,
                   TransferClass.DTOH_UNKNOWN)
#: Minimum idle launches per class before its own launch latency is used.
_MIN_SAMPLES = 3
#: Minimum waits per class pair before a dependency latency is used (rarer waits are not a
#: GPU property but something the trace does not show, such as a late launch on another thread).
_MIN_DEP_SAMPLES = 20


@dataclass
class _Edges:
    """Edge lists collected per kind before the CSR is built."""

    src: list[np.ndarray]
    dst: list[np.ndarray]
    kind: list[np.ndarray]
    anchor: list[np.ndarray]
    lag: list[np.ndarray]

    @classmethod
    def new(cls) -> _Edges:
        return cls([], [], [], [], [])

    def add(self, src: np.ndarray, dst: np.ndarray, kind: EdgeKind, anchor: np.ndarray | int,
            lag: np.ndarray | float = 0.0) -> None:
        src = np.asarray(src, dtype=np.int32)
        n = len(src)
        if n == 0:
            return
        self.src.append(src)
        self.dst.append(np.asarray(dst, dtype=np.int32))
        self.kind.append(np.full(n, kind, dtype=np.int8))
        self.anchor.append(np.broadcast_to(np.asarray(anchor, dtype=np.int8), (n,)).copy())
        self.lag.append(np.broadcast_to(np.asarray(lag, dtype=np.float64), (n,)).copy())


def build_graph(path: str | os.PathLike[str], *, copy_engines_per_direction: int | None = None) -> OpGraph:
    """Read a trace file (any format nodecast reads) and its host records, and build its OpGraph."""
    from nodecast.traces.api_readers import read_api
    from nodecast.traces.load import load_trace

    return build(load_trace(path), read_api(path), copy_engines_per_direction=copy_engines_per_direction)


def build(trace: Trace, api: ApiCalls, *, copy_engines_per_direction: int | None = None) -> OpGraph:
    """The OpGraph of ``trace`` and its host records ``api`` (see the module docstring).

    ``copy_engines_per_direction``: copy engines per direction per device;
    None reads it from the trace (one per direction, or one in all when the
    GPU has a single asynchronous engine). Raises InputError on records that
    contradict each other (a GPU op starting before its launch call) and on a
    cycle.
    """
    source = trace.meta.source or api.meta.source
    notes: list[str] = []
    g = _gpu_table(trace)
    n_g = len(g["start"])
    n_a = len(api)
    if n_g == 0:
        raise InputError("the trace holds no kernel, copy or memset", path=source or None,
                         hint="Profile with CUDA tracing on and export again")
    api_kind = api.kinds()
    link = _link(g, api)
    g["thread"] = api["thread"][np.maximum(link, 0)] if n_a else np.full(n_g, -1, np.int64)
    g["thread"] = np.where(link >= 0, g["thread"], -1)
    _check_launch_order(g, api, link, trace, source)
    origin = _origin(g, api, link)

    # Blocking calls and what they wait for.
    blocking = _blocking(api_kind, g, link, n_a)
    wait_of = np.full(n_a, -1, np.int64)
    wait_rows = np.flatnonzero(blocking)
    wait_of[wait_rows] = n_g + n_a + np.arange(len(wait_rows))
    n = n_g + n_a + len(wait_rows)

    streams = _StreamIndex(g, link, api)
    edges = _Edges.new()
    _stream_order(g, edges)
    _event_waits(g, api, api_kind, streams, edges, notes)
    engines, shared_engine = _engine_order(g, api, edges, copy_engines_per_direction, notes)
    _default_stream(g, api, streams, edges, notes)
    _graph_order(g, link, edges, notes)
    release_gpu = _fallback(g, link, edges, origin, notes)
    # Every edge between GPU ops is known here: launch and dependency latencies are calibrated on them.
    lat, dep = _calibrate(g, api, link, blocking, edges, n_g)
    awaited_end = _sync_edges(g, api, api_kind, link, blocking, wait_of, streams, edges, n_g, notes, source)
    del streams  # NOTE: the builder's temporaries go as soon as they are used: the CSR and the order come last
    first_rel = _program_order(api, wait_of, edges, n_g, origin)
    del wait_of
    _host_flows(api, edges, n_g)
    _summary_notes(g, api, link, notes)

    ops = _op_table(trace, g, api, link, blocking, wait_rows, awaited_end, n, n_g, n_a)
    del g, link, blocking, wait_rows, awaited_end, api_kind
    ops["release_s"][:n_g] = release_gpu
    ops["release_s"][n_g : n_g + n_a] = first_rel
    del release_gpu, first_rel
    indptr, src, kind, anchor, lag = _csr(edges, n)
    order, stuck = topological_order(n, indptr, src)
    if len(stuck):
        raise _cycle_error(stuck, ops, trace, api, source)
    graph = OpGraph(ops=ops, indptr=indptr, src=src, kind=kind, anchor=anchor, lag_s=lag, order=order,
                    names=[*trace.names, *api.names], origin_ns=int(origin), source=source,
                    format=trace.meta.format, gpus=dict(trace.meta.gpus),
                    params={"launch_latency_s": lat, "dependency_latency_s": dep, "copy_engines": engines,
                            "shared_copy_engine": shared_engine},
                    # The readers' notes first: what they made of the file (runs joined, units told) underlies
                    # every result of the graph, and only the graph's notes reach replay's and forecast's output.
                    notes=[*trace.meta.notes, *api.meta.notes, *notes])
    return graph


# -- the GPU side ----------------------------------------------------------------------------

def _gpu_table(trace: Trace) -> dict[str, np.ndarray]:
    """GPU ops of the trace (no SYNC rows): their rows and the columns the builder needs."""
    keep = trace["kind"] != TraceKind.SYNC
    rows = np.flatnonzero(keep).astype(np.int32)  # the graph's trace_row dtype
    every = len(rows) == len(trace)  # no sync rows: use the Trace's own columns, no copy

    def col(name: str) -> np.ndarray:
        return trace[name] if every else trace[name][rows]

    return {"row": rows, "kind": col("kind"), "copy": col("copy_kind"), "dst_mem": col("dst_mem"),
            "bytes": col("bytes"), "start": col("start_ns"), "end": col("end_ns"), "device": col("device"),
            "stream": col("stream"), "corr": col("correlation"), "name": col("name_id"),
            "tclass": trace.transfer_class if every else trace.transfer_class[rows]}


def _link(g: dict[str, np.ndarray], api: ApiCalls) -> np.ndarray:
    """ApiCalls row of every GPU op's launching call (by correlation id; runtime before driver), or -1."""
    link = np.full(len(g["start"]), -1, np.int64)
    calls = np.flatnonzero((api["domain"] != Domain.CPU_OP) & (api["correlation"] > 0))
    if len(calls) == 0:
        return link
    order = calls[np.lexsort((api["domain"][calls], api["correlation"][calls]))]
    keys = api["correlation"][order]
    pos = np.minimum(np.searchsorted(keys, g["corr"]), len(keys) - 1)
    hit = (keys[pos] == g["corr"]) & (g["corr"] > 0)
    link[hit] = order[pos[hit]]
    return link


def _check_launch_order(g, api: ApiCalls, link: np.ndarray, trace: Trace, source: str) -> None:
    """InputError when a GPU op starts before the API call that launched it (no profiler writes that)."""
    has = link >= 0
    if not has.any():
        return
    early = np.flatnonzero(has & (g["start"] < np.where(has, api["start_ns"][np.maximum(link, 0)], 0)))
    if len(early) == 0:
        return
    i = int(early[0])
    name = trace.names[g["name"][i]] if g["name"][i] >= 0 else TraceKind(int(g["kind"][i])).name.lower()
    call = api.names[api["name_id"][link[i]]] if api["name_id"][link[i]] >= 0 else "its call"
    raise InputError(
        f"{len(early):,} GPU ops start before the API call that launched them (first: {name[:60]} "
        f"at {int(g['start'][i])} ns, correlation id {int(g['corr'][i])}, launched by {call} at "
        f"{int(api['start_ns'][link[i]])} ns)",
        path=source or None,
        hint="The GPU and CPU records contradict each other; export the profile again",
    )


def _origin(g, api: ApiCalls, link: np.ndarray) -> int:
    """The trace's first timestamp: the first host record, or an earlier GPU op without API record."""
    firsts = []
    if len(api):
        firsts.append(int(api["start_ns"].min()))
    if (link < 0).any():
        firsts.append(int(g["start"][link < 0].min()))
    return min(firsts) if firsts else int(g["start"].min())


class _StreamIndex:
    """"Last op of a stream launched before time t" and "first launched after t", vectorized.

    Streams are (device, stream) pairs coded densely; an op's launch time is
    its API call's start, or its recorded start when it has no API record.
    """

    def __init__(self, g: dict[str, np.ndarray], link: np.ndarray, api: ApiCalls) -> None:
        n = len(g["start"])
        call_start = api["start_ns"][np.maximum(link, 0)] if len(api) else np.zeros(n, np.int64)
        self.launch = np.where(link >= 0, call_start, g["start"])
        # Page migrations are not stream work: no stream query ever returns one.
        member = np.flatnonzero(~np.isin(g["copy"], _UVM))
        pair = g["device"].astype(np.int64) * (1 << 40) + (g["stream"] + 1)
        self.pairs, inverse = np.unique(pair[member], return_inverse=True)
        self.code = np.full(n, -1, np.int64)
        self.code[member] = inverse
        self.times = np.sort(self.launch[member])
        self.n = len(member)
        key = self.code[member] * (self.n + 1) + np.searchsorted(self.times, self.launch[member], "left")
        local = np.lexsort((g["start"][member], key))
        self.order = member[local].astype(np.int32)
        self.sorted_key = key[local]
        del key, local
        self.device_of_code = (self.pairs >> 40).astype(np.int64)
        self.stream_of_code = (self.pairs & ((1 << 40) - 1)) - 1

    def codes(self, device: np.ndarray | int, stream: np.ndarray | int) -> np.ndarray:
        """Code of (device, stream) pairs; -1 for a pair without GPU ops."""
        pair = np.asarray(device, np.int64) * (1 << 40) + (np.asarray(stream, np.int64) + 1)
        pos = np.minimum(np.searchsorted(self.pairs, pair), len(self.pairs) - 1)
        return np.where(self.pairs[pos] == pair, pos, -1)

    def codes_of_stream(self, stream: np.ndarray) -> np.ndarray:
        """Code of a stream id alone (ids are unique across a process's devices); -1 when unknown."""
        stream = np.asarray(stream, np.int64)
        out = np.full(stream.shape, -1, np.int64)
        for code, s in enumerate(self.stream_of_code):
            out[stream == s] = code
        return out

    def last_before(self, code: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
        """GPU op index of the last op of stream ``code`` launched strictly before ``t_ns``; -1 if none."""
        code = np.asarray(code, np.int64)
        r = np.searchsorted(self.times, np.asarray(t_ns, np.int64), "left")
        q = code * (self.n + 1) + r
        if self.n == 0:
            return np.full(q.shape, -1, np.int64)
        pos = np.searchsorted(self.sorted_key, q, "left") - 1
        ok = (code >= 0) & (pos >= 0)
        pos = np.maximum(pos, 0)
        ok &= (self.sorted_key[pos] // (self.n + 1)) == code
        return np.where(ok, self.order[pos], -1)

    def first_after(self, code: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
        """GPU op index of the first op of stream ``code`` launched strictly after ``t_ns``; -1 if none."""
        code = np.asarray(code, np.int64)
        r = np.searchsorted(self.times, np.asarray(t_ns, np.int64), "right")
        q = code * (self.n + 1) + r
        if self.n == 0:
            return np.full(q.shape, -1, np.int64)
        pos = np.searchsorted(self.sorted_key, q, "left")
        ok = (code >= 0) & (pos < self.n)
        pos = np.minimum(pos, self.n - 1)
        ok &= (self.sorted_key[pos] // (self.n + 1)) == code
        return np.where(ok, self.order[pos], -1)

    def device_codes(self, device: int) -> np.ndarray:
        """Codes of every stream of a device."""
        return np.flatnonzero(self.device_of_code == device)


def _stream_order(g, edges: _Edges) -> None:
    """STREAM_ORDER between consecutive ops of each (device, stream), in recorded order; no UVM migrations."""
    chained = ~np.isin(g["copy"], _UVM)
    idx = np.flatnonzero(chained)
    order = idx[np.lexsort((g["start"][idx], g["stream"][idx], g["device"][idx]))]
    same = (g["device"][order[1:]] == g["device"][order[:-1]]) & (g["stream"][order[1:]] == g["stream"][order[:-1]])
    edges.add(order[:-1][same], order[1:][same], EdgeKind.STREAM_ORDER, Anchor.END)


# -- launches and blocking calls ---------------------------------------------------------------

def _blocking(api_kind: np.ndarray, g, link: np.ndarray, n_a: int) -> np.ndarray:
    """Which host records block the calling thread (see SYNC in the module docstring)."""
    blocking = np.isin(api_kind, (ApiKind.DEVICE_SYNC, ApiKind.STREAM_SYNC, ApiKind.EVENT_SYNC, ApiKind.FREE_SYNC))
    has = link >= 0
    rows, kinds = link[has], api_kind[link[has]]
    copy, tclass, dst_mem = g["copy"][has], g["tclass"][has], g["dst_mem"][has]
    sync_copy = (kinds == ApiKind.MEMCPY) & (copy != CopyKind.DTOD)
    async_copy = (kinds == ApiKind.MEMCPY_ASYNC) & np.isin(tclass, _BLOCKING_ASYNC)
    pinned_set = (kinds == ApiKind.MEMSET) & (dst_mem == MemKind.PINNED)
    blocking[rows[sync_copy | async_copy | pinned_set]] = True
    return blocking


#: GPU -> GPU edges whose lag is the GPU's dependency latency (calibrated per trace).
_DEPENDENCY_KINDS = (EdgeKind.STREAM_ORDER, EdgeKind.ENGINE_ORDER, EdgeKind.EVENT_WAIT, EdgeKind.DEFAULT_STREAM,
                     EdgeKind.GRAPH_ORDER)
_DEP_CLASSES = ("kernel", "memset", "copy HtoD", "copy DtoH", "copy other")


def _dep_class(g, idx: np.ndarray) -> np.ndarray:
    """Dependency-latency class of GPU ops (index into ``_DEP_CLASSES``)."""
    out = np.full(len(idx), 4, np.int64)
    kind, copy = g["kind"][idx], g["copy"][idx]
    out[kind == TraceKind.KERNEL] = 0
    out[kind == TraceKind.MEMSET] = 1
    out[(kind == TraceKind.MEMCPY) & np.isin(copy, (CopyKind.HTOD, CopyKind.UVM_HTOD))] = 2
    out[(kind == TraceKind.MEMCPY) & np.isin(copy, (CopyKind.DTOH, CopyKind.UVM_DTOH))] = 3
    return out


def _gpu_edges(g, edges: _Edges) -> tuple[np.ndarray, ...]:
    """(src, dst, measured time the edge allows, list index) of every edge collected so far (all GPU -> GPU)."""
    src = np.concatenate(edges.src) if edges.src else np.zeros(0, np.int32)
    dst = np.concatenate(edges.dst) if edges.dst else np.zeros(0, np.int32)
    anchor = np.concatenate(edges.anchor) if edges.anchor else np.zeros(0, np.int8)
    lag = np.concatenate(edges.lag) if edges.lag else np.zeros(0)
    t = np.where(anchor == Anchor.START, g["start"][src], g["end"][src]) + np.round(lag / _NS).astype(np.int64)
    return src, dst, t


def _calibrate(g, api: ApiCalls, link: np.ndarray, blocking: np.ndarray, edges: _Edges,
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
    GPU-side predecessor set (see ``_calibrate``); a pair with fewer than ``_MIN_DEP_SAMPLES`` such ops
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
    out[g["kind"][idx] == TraceKind.KERNEL] = -1
    out[g["kind"][idx] == TraceKind.MEMSET] = -2
    return out


def _class_label(c: int) -> str:
    return {-1: "kernel", -2: "memset"}.get(c) or TransferClass(c).key


def _sync_edges(g, api: ApiCalls, api_kind: np.ndarray, link: np.ndarray, blocking: np.ndarray,
                wait_of: np.ndarray, streams: _StreamIndex, edges: _Edges, n_g: int, notes: list[str],
                source: str) -> np.ndarray:
    """SYNC edges (awaited GPU op end -> WAIT) and API -> WAIT; returns the measured end (ns) of the
    awaited work per host record (MISSING as int64 min where it awaited nothing)."""
    n_a = len(api)
    awaited_end = np.full(n_a, np.iinfo(np.int64).min, np.int64)
    src_all: list[np.ndarray] = []
    dst_all: list[np.ndarray] = []

    def wait_for(rows: np.ndarray, ops: np.ndarray) -> None:
        ok = ops >= 0
        rows, ops = rows[ok], ops[ok]
        src_all.append(ops)
        dst_all.append(wait_of[rows])
        np.maximum.at(awaited_end, rows, g["end"][ops])

    start = api["start_ns"]
    # Copies and memsets that block wait for the op they launched.
    has = np.flatnonzero(link >= 0)
    mine = has[blocking[link[has]] & np.isin(api_kind[link[has]], (ApiKind.MEMCPY, ApiKind.MEMCPY_ASYNC,
                                                                     ApiKind.MEMSET, ApiKind.MEMSET_ASYNC))]
    wait_for(link[mine], mine)
    # Device-wide waits (device syncs, frees, and stream syncs on an unknown stream).
    dev_rows = np.flatnonzero(blocking & np.isin(api_kind, (ApiKind.DEVICE_SYNC, ApiKind.FREE_SYNC)))
    stream_rows = np.flatnonzero(blocking & (api_kind == ApiKind.STREAM_SYNC))
    codes = streams.codes_of_stream(api["stream"][stream_rows])
    unknown = stream_rows[codes < 0]
    no_stream = int(np.count_nonzero(api["stream"][unknown] < 0))
    if no_stream:
        notes.append(f"{no_stream:,} stream synchronisations name no stream (no synchronization record): "
                     "taken as device-wide")
        dev_rows = np.concatenate([dev_rows, unknown[api["stream"][unknown] < 0]])
    known = stream_rows[codes >= 0]
    wait_for(known, streams.last_before(codes[codes >= 0], start[known]))
    devices = np.unique(g["device"])
    for d in devices:
        rows = dev_rows[(api["device"][dev_rows] == d) | (api["device"][dev_rows] < 0)]
        for code in streams.device_codes(int(d)):
            wait_for(rows, streams.last_before(np.full(len(rows), code), start[rows]))
    # Event syncs wait for the work captured by the event's latest record.
    ev_rows = np.flatnonzero(blocking & (api_kind == ApiKind.EVENT_SYNC))
    if len(ev_rows):
        captured, missing = _captured(api, api_kind, ev_rows, streams, g)
        for col in captured:
            wait_for(ev_rows, col)
        if missing:
            notes.append(f"{missing:,} event synchronisations wait on an event never recorded before them: "
                         "they return at once, as CUDA specifies")
    if src_all:
        edges.add(np.concatenate(src_all), np.concatenate(dst_all), EdgeKind.SYNC, Anchor.END)
    rows = np.flatnonzero(blocking)
    edges.add(n_g + rows, wait_of[rows], EdgeKind.PROGRAM_ORDER, Anchor.END)
    late = blocking & (awaited_end > api["end_ns"])
    if late.any():
        notes.append(f"{int(np.count_nonzero(late)):,} blocking calls returned before the GPU work they are "
                     "taken to wait for had ended (their wait is replayed as ending with that work)")
    return awaited_end


def _captured(api: ApiCalls, api_kind: np.ndarray, rows: np.ndarray, streams: _StreamIndex,
              g) -> tuple[list[np.ndarray], int]:
    """For calls on events (``rows``), the GPU ops captured by the event's latest record before each
    call: one column of op indices (or -1) per stream the record may cover; and how many calls
    found no record."""
    rec = np.flatnonzero((api_kind == ApiKind.EVENT_RECORD) & (api["event"] >= 0))
    ev = api["event"][rows]
    t = api["start_ns"][rows]
    found = np.full(len(rows), -1, np.int64)
    if len(rec):
        order = rec[np.lexsort((api["start_ns"][rec], api["event"][rec]))]
        ev_sorted, t_sorted = api["event"][order], api["start_ns"][order]
        # Last record of the same event started before the call.
        lo = np.searchsorted(ev_sorted, ev, "left")
        hi = np.searchsorted(ev_sorted, ev, "right")
        for j in range(len(rows)):  # one binary search per event call, on its event's records only
            k = lo[j] + np.searchsorted(t_sorted[lo[j] : hi[j]], t[j], "left") - 1
            if k >= lo[j] and ev[j] >= 0:
                found[j] = order[k]
    missing = int(np.count_nonzero(found < 0))
    ok = found >= 0
    rec_rows = found[ok]
    code = streams.codes_of_stream(api["stream"][rec_rows])
    columns: list[np.ndarray] = []
    col = np.full(len(rows), -1, np.int64)
    col[np.flatnonzero(ok)] = streams.last_before(code, api["start_ns"][rec_rows])
    columns.append(col)
    # A record whose stream is unknown captures every stream of the device(s).
    unknown = np.flatnonzero(ok)[code < 0]
    if len(unknown):
        for c in range(len(streams.pairs)):
            col = np.full(len(rows), -1, np.int64)
            col[unknown] = streams.last_before(np.full(len(unknown), c), api["start_ns"][found[unknown]])
            columns.append(col)
    return columns, missing


def _event_waits(g, api: ApiCalls, api_kind: np.ndarray, streams: _StreamIndex, edges: _Edges,
                 notes: list[str]) -> None:
    """EVENT_WAIT: the waiting stream's first op launched after cudaStreamWaitEvent waits for the
    work captured by the event's latest record."""
    rows = np.flatnonzero(api_kind == ApiKind.STREAM_WAIT_EVENT)
    if len(rows) == 0:
        return
    is_known = (api["stream"][rows] >= 0) & (api["event"][rows] >= 0)
    known = rows[is_known]
    if len(known) < len(rows):
        added = _blind_waits(g, api, rows[~is_known], streams, edges)
        notes.append(f"{len(rows) - len(known):,} cudaStreamWaitEvent calls name no stream or event (no "
                     "synchronization record): the next op their thread launches is taken to wait for the "
                     f"last op launched before the call on every other stream of its device ({added:,} edges)")
    if len(known) == 0:
        return
    target = streams.first_after(streams.codes_of_stream(api["stream"][known]), api["start_ns"][known])
    captured, missing = _captured(api, api_kind, known, streams, g)
    if missing:
        notes.append(f"{missing:,} stream waits are on an event never recorded before them: no dependency, "
                     "as CUDA specifies")
    for col in captured:
        ok = (col >= 0) & (target >= 0) & (col != target)
        edges.add(col[ok], target[ok], EdgeKind.EVENT_WAIT, Anchor.END)


def _blind_waits(g, api: ApiCalls, rows: np.ndarray, streams: _StreamIndex, edges: _Edges) -> int:
    """Fallback EVENT_WAIT edges for stream waits whose stream and event the trace does not name."""
    launched = np.flatnonzero(streams.code >= 0)
    if len(launched) == 0 or len(rows) == 0:
        return 0
    order = launched[np.lexsort((streams.launch[launched], g["thread"][launched]))]
    th, t = g["thread"][order], streams.launch[order]
    target = np.full(len(rows), -1, np.int64)
    w_thread, w_start = api["thread"][rows], api["start_ns"][rows]
    lo = np.searchsorted(th, w_thread, "left")
    hi = np.searchsorted(th, w_thread, "right")
    for j in range(len(rows)):  # one search per wait call, within its thread's launches
        k = lo[j] + np.searchsorted(t[lo[j]:hi[j]], w_start[j], "right")
        if k < hi[j]:
            target[j] = order[k]
    ok = target >= 0
    rows, target = rows[ok], target[ok]
    count = 0
    for code in range(len(streams.pairs)):
        other = (streams.code[target] != code) & (streams.device_of_code[code] == g["device"][target])
        u = streams.last_before(np.full(int(other.sum()), code), api["start_ns"][rows[other]])
        keep = u >= 0
        edges.add(u[keep], target[other][keep], EdgeKind.EVENT_WAIT, Anchor.END)
        count += int(keep.sum())
    return count


def _engine_order(g, api: ApiCalls, edges: _Edges, per_direction: int | None,
                  notes: list[str]) -> tuple[dict[int, int], list[int]]:
    """ENGINE_ORDER chains of copies per (device, engine); returns the engines used per device (per direction, or
    in all on the devices of the list: one asynchronous engine serving every direction)."""
    engines: dict[int, int] = {}
    shared: list[int] = []
    copies = np.flatnonzero((g["kind"] == TraceKind.MEMCPY) & ~np.isin(g["copy"], _UVM))
    engine = _ENGINE_OF_COPY[g["copy"][copies]]
    keep = np.isin(engine, (Engine.HTOD, Engine.DTOH, Engine.PEER, Engine.HTOH))
    copies, engine = copies[keep], engine[keep]
    count = per_direction or 1
    for d in np.unique(g["device"][copies]):
        d = int(d)
        recorded = api.meta.copy_engines.get(d)
        mine = g["device"][copies] == d
        idx, eng = copies[mine], engine[mine]
        if per_direction is None and recorded == 1:
            eng = np.zeros_like(eng)  # a single asynchronous engine serves every direction
            engines[d] = 1
            shared.append(d)
        else:
            engines[d] = count
            if count > 1:
                continue  # several engines per direction: copies may overlap, nothing to serialise
        order = np.lexsort((g["start"][idx], eng))
        idx, eng = idx[order], eng[order]
        same = eng[1:] == eng[:-1]
        edges.add(idx[:-1][same], idx[1:][same], EdgeKind.ENGINE_ORDER, Anchor.END)
    if copies.size and per_direction is None:
        told = sorted(d for d in engines if d not in api.meta.copy_engines)
        if told:
            notes.append(f"copy engines of device(s) {told} not recorded: assumed one per direction")
    return engines, shared


def _default_stream(g, api: ApiCalls, streams: _StreamIndex, edges: _Edges, notes: list[str]) -> None:
    """DEFAULT_STREAM edges: legacy default stream vs blocking streams, per device."""
    flags = api.meta.stream_flags
    if api.meta.format == "kineto-json" or (not flags and not api.meta.null_streams):
        return
    unflagged = 0
    for d in np.unique(g["device"]):
        d = int(d)
        codes = streams.device_codes(d)
        ids = streams.stream_of_code[codes]
        null = np.array([flags.get(int(s)) == "null" or api.meta.null_streams.get(d) == int(s) for s in ids])
        blocking = np.array([flags.get(int(s), "blocking") == "blocking" for s in ids]) & ~null
        unflagged += sum(1 for j, s in enumerate(ids) if int(s) not in flags and not null[j])
        if not null.any() or not blocking.any():
            continue
        in_null = np.isin(streams.code, codes[null])
        in_blocking = np.isin(streams.code, codes[blocking])
        v_null = np.flatnonzero(in_null)
        for c in codes[blocking]:  # few streams: one vectorized query per stream
            u = streams.last_before(np.full(len(v_null), c), streams.launch[v_null])
            ok = u >= 0
            edges.add(u[ok], v_null[ok], EdgeKind.DEFAULT_STREAM, Anchor.END)
        v_blk = np.flatnonzero(in_blocking)
        for c in codes[null]:
            u = streams.last_before(np.full(len(v_blk), c), streams.launch[v_blk])
            ok = u >= 0
            edges.add(u[ok], v_blk[ok], EdgeKind.DEFAULT_STREAM, Anchor.END)
    if unflagged:
        notes.append(f"{unflagged} streams have no recorded creation flag: taken as blocking "
                     "(they synchronise with the legacy default stream)")


def _graph_order(g, link: np.ndarray, edges: _Edges, notes: list[str]) -> None:
    """GRAPH_ORDER: the GPU ops of one launch call (a CUDA graph launch) in recorded order.

    Traces do not record a graph's own dependencies; consecutive ops whose
    recorded intervals do not overlap are taken as dependent, overlapping
    ones as concurrent (no edge).
    """
    has = np.flatnonzero(link >= 0)
    counts = np.bincount(link[has]) if len(has) else np.zeros(0, np.int64)
    multi = has[counts[link[has]] > 1]
    if len(multi) == 0:
        return
    order = multi[np.lexsort((g["start"][multi], link[multi]))]
    u, v = order[:-1], order[1:]
    ok = (link[u] == link[v]) & (g["end"][u] <= g["start"][v])
    edges.add(u[ok], v[ok], EdgeKind.GRAPH_ORDER, Anchor.END)
    calls = len(np.unique(link[multi]))
    notes.append(f"{len(multi):,} GPU ops come from {calls:,} calls that launch several (CUDA graphs): "
                 "run in recorded order, overlapping ones concurrently (the graph's own edges are not traced)")


# -- the host side -----------------------------------------------------------------------------

def _program_order(api: ApiCalls, wait_of: np.ndarray, edges: _Edges, n_g: int, origin: int) -> np.ndarray:
    """PROGRAM_ORDER / NESTING per thread; returns each record's release time (s after origin)."""
    n_a = len(api)
    release = np.zeros(n_a, np.float64)
    if n_a == 0:
        return release
    thread, start, end = api["thread"], api["start_ns"], api["end_ns"]
    first = np.ones(n_a, bool)
    first[1:] = thread[1:] != thread[:-1]
    release[first] = (start[first] - origin) * _NS
    v = np.flatnonzero(~first)
    u = v - 1
    inside = end[u] > start[v]
    exit_op = np.where(wait_of[u] >= 0, wait_of[u], n_g + u)
    edges.add(exit_op[~inside], n_g + v[~inside], EdgeKind.PROGRAM_ORDER, Anchor.END,
              (start[v[~inside]] - end[u[~inside]]) * _NS)
    edges.add(n_g + u[inside], n_g + v[inside], EdgeKind.NESTING, Anchor.START,
              (start[v[inside]] - start[u[inside]]) * _NS)
    return release


def _host_flows(api: ApiCalls, edges: _Edges, n_g: int) -> None:
    """FLOW edges from Kineto fwdbwd flows, matched to host records by (thread, start)."""
    flows = api.meta.host_flows
    if len(flows) == 0 or len(api) == 0:
        return
    key = np.lexsort((api["start_ns"], api["thread"]))
    th, st = api["thread"][key], api["start_ns"][key]

    def find(thread: np.ndarray, start: np.ndarray) -> np.ndarray:
        lo = np.searchsorted(th, thread, "left")
        out = np.full(len(thread), -1, np.int64)
        for j in range(len(thread)):  # one search per flow, within its thread
            hi = np.searchsorted(th, thread[j], "right")
            k = lo[j] + np.searchsorted(st[lo[j]:hi], start[j], "left")
            if k < hi and st[k] == start[j]:
                out[j] = key[k]
        return out

    u = find(flows[:, 0], flows[:, 1])
    v = find(flows[:, 2], flows[:, 3])
    ok = (u >= 0) & (v >= 0) & (u != v)
    u, v = u[ok], v[ok]
    after = api["end_ns"][u] <= api["start_ns"][v]
    edges.add(n_g + u[after], n_g + v[after], EdgeKind.FLOW, Anchor.END,
              (api["start_ns"][v[after]] - api["end_ns"][u[after]]) * _NS)
    edges.add(n_g + u[~after], n_g + v[~after], EdgeKind.FLOW, Anchor.START,
              (api["start_ns"][v[~after]] - api["start_ns"][u[~after]]) * _NS)


def _fallback(g, link: np.ndarray, edges: _Edges, origin: int, notes: list[str]) -> np.ndarray:
    """RECORDED_OFFSET edges for GPU ops without API record; returns the GPU ops' release times (s)."""
    n_g = len(g["start"])
    release = np.zeros(n_g, np.float64)
    orphans = np.flatnonzero(link < 0)
    if len(orphans) == 0:
        return release
    # The previous op of the same stream if there is one (page migrations: of the device).
    stream = np.where(np.isin(g["copy"], _UVM), -2, g["stream"])
    prev = np.full(len(orphans), -1, np.int64)
    for key in ((g["device"], stream), (g["device"],)):
        order = np.lexsort((g["start"], *reversed(key)))
        pos = np.empty(n_g, np.int64)
        pos[order] = np.arange(n_g)
        p = pos[orphans]
        cand = np.where(p > 0, order[np.maximum(p - 1, 0)], -1)
        same = cand >= 0
        for col in key:
            same &= col[np.maximum(cand, 0)] == col[orphans]
        prev = np.where((prev < 0) & same, cand, prev)
    has_prev = prev >= 0
    v, u = orphans[has_prev], prev[has_prev]
    overlap = g["end"][u] > g["start"][v]
    edges.add(u[overlap], v[overlap], EdgeKind.RECORDED_OFFSET, Anchor.START,
              (g["start"][v[overlap]] - g["start"][u[overlap]]) * _NS)
    edges.add(u[~overlap], v[~overlap], EdgeKind.RECORDED_OFFSET, Anchor.END,
              (g["start"][v[~overlap]] - g["end"][u[~overlap]]) * _NS)
    first = orphans[~has_prev]
    release[first] = (g["start"][first] - origin) * _NS
    return release


# -- assembly ------------------------------------------------------------------------------------

def _op_table(trace: Trace, g, api: ApiCalls, link: np.ndarray, blocking: np.ndarray, wait_rows: np.ndarray,
              awaited_end: np.ndarray, n: int, n_g: int, n_a: int) -> dict[str, np.ndarray]:
    ops = {
        "kind": np.empty(n, np.int8), "device": np.full(n, -1, np.int16), "queue": np.empty(n, np.int64),
        "engine": np.zeros(n, np.int8), "thread": np.full(n, -1, np.int64), "bytes": np.zeros(n, np.int64),
        "flops": np.full(n, np.nan), "transfer_class": np.zeros(n, np.int8), "name_id": np.full(n, -1, np.int32),
        "trace_row": np.full(n, -1, np.int32), "source_dur_s": np.empty(n, np.float64),
        "release_s": np.zeros(n, np.float64),
    }
    gk = np.array([OpKind.KERNEL, OpKind.COPY, OpKind.MEMSET, OpKind.KERNEL], np.int8)[g["kind"]]
    gs = slice(0, n_g)
    ops["kind"][gs] = gk
    ops["device"][gs] = g["device"]
    ops["queue"][gs] = g["stream"]
    ops["engine"][gs] = np.where(gk == OpKind.COPY, _ENGINE_OF_COPY[g["copy"]], Engine.NONE)
    if n_a:
        ops["thread"][gs] = np.where(link >= 0, api["thread"][np.maximum(link, 0)], -1)
    ops["bytes"][gs] = g["bytes"]
    ops["transfer_class"][gs] = g["tclass"]
    ops["name_id"][gs] = g["name"]
    ops["trace_row"][gs] = g["row"]
    ops["source_dur_s"][gs] = (g["end"] - g["start"]) * _NS
    hs = slice(n_g, n_g + n_a)
    ops["kind"][hs] = OpKind.API
    ops["queue"][hs] = api["thread"]
    ops["thread"][hs] = api["thread"]
    ops["name_id"][hs] = np.where(api["name_id"] >= 0, api["name_id"] + len(trace.names), -1)
    ops["trace_row"][hs] = np.arange(n_a)
    start, end = api["start_ns"], api["end_ns"]
    waited = blocking & (awaited_end > start)
    ops["source_dur_s"][hs] = np.where(waited, 0.0, (end - start) * _NS)
    ws = slice(n_g + n_a, n)
    ops["kind"][ws] = OpKind.WAIT
    ops["queue"][ws] = api["thread"][wait_rows]
    ops["thread"][ws] = api["thread"][wait_rows]
    ops["name_id"][ws] = ops["name_id"][n_g + wait_rows]
    ops["trace_row"][ws] = wait_rows
    ret = np.maximum(end[wait_rows] - np.maximum(awaited_end[wait_rows], start[wait_rows]), 0)
    ops["source_dur_s"][ws] = np.where(waited[wait_rows], ret * _NS, 0.0)
    return ops


def _csr(edges: _Edges, n: int) -> tuple[np.ndarray, ...]:
    """The edge lists sorted by destination (CSR), scattered field by field.

    Each field goes straight from its per-kind parts to its sorted place, so
    that no concatenated copy of a field is ever held next to the sorted one.
    """
    if not edges.src:
        empty = np.zeros(0)
        return (np.zeros(n + 1, np.int64), empty.astype(np.int32), empty.astype(np.int8), empty.astype(np.int8),
                empty.astype(np.float64))
    dst = np.concatenate(edges.dst)
    edges.dst.clear()
    indptr, pos = csr_positions(dst, n)
    del dst
    out: list[np.ndarray] = [indptr]
    for parts, dtype in ((edges.src, np.int32), (edges.kind, np.int8), (edges.anchor, np.int8),
                         (edges.lag, np.float64)):
        field = np.empty(len(pos), dtype)
        lo = 0
        while parts:
            part = parts.pop(0)
            field[pos[lo : lo + len(part)]] = part
            lo += len(part)
        out.append(field)
    return tuple(out)


def _cycle_error(stuck: np.ndarray, ops: dict[str, np.ndarray], trace: Trace, api: ApiCalls,
                 source: str) -> InputError:
    names = [*trace.names, *api.names]
    shown = []
    for v in stuck[:3]:
        k = OpKind(int(ops["kind"][v])).name.lower()
        nid = int(ops["name_id"][v])
        shown.append(f"{k} {names[nid][:40] if nid >= 0 else ''} (row {int(ops['trace_row'][v])})".replace("  ", " "))
    return InputError(
        f"the operation graph has a cycle through {len(stuck):,} ops (first: {'; '.join(shown)})",
        path=source or None,
        hint="The trace's synchronization or event records contradict its timeline; export the profile again",
    )


def _summary_notes(g, api: ApiCalls, link: np.ndarray, notes: list[str]) -> None:
    orphans = link < 0
    n_orphans = int(np.count_nonzero(orphans))
    if n_orphans and len(api):
        calls = api["correlation"][(api["domain"] != Domain.CPU_OP) & (api["correlation"] > 0)]
        before = int(np.count_nonzero(orphans & (g["corr"] > 0) & (g["corr"] < (calls.min() if len(calls) else 0))))
        uvm = int(np.count_nonzero(orphans & np.isin(g["copy"], _UVM)))
        rest = n_orphans - before - uvm
        parts = []
        if before:
            parts.append(f"{before:,} launched before the first recorded call (profile window)")
        if uvm:
            parts.append(f"{uvm:,} unified-memory page migrations")
        if rest:
            parts.append(f"{rest:,} whose correlation id matches no call")
        notes.append(f"{n_orphans:,} of {len(orphans):,} GPU ops have no API record ({'; '.join(parts)}): "
                     "placed at their recorded offset from the previous GPU op")
    elif n_orphans:
        # About NO_API: results that keep the notes but not the graph (a comparison of targets) tell from it
        # where end to end starts (metrics.notes_have_api).
        notes.append(Note(f"no API records: all {n_orphans:,} GPU ops placed at their recorded offset from the "
                          "previous GPU op (replay reproduces the recorded timeline by construction)", NO_API))
    processes = np.unique(api["process"]) if len(api) else np.zeros(0)
    if len(processes) > 1:
        notes.append(f"{len(processes)} processes: replayed together, each thread in its own program order")
