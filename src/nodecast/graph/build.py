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

This module puts the graph together from its parts: ``gpu_ops`` (the GPU
side as the builder reads it: columns, launching calls, stream queries),
``gpu_edges`` (STREAM_ORDER, EVENT_WAIT, ENGINE_ORDER, DEFAULT_STREAM,
GRAPH_ORDER, RECORDED_OFFSET), ``host_edges`` (blocking calls and their
SYNC edges, PROGRAM_ORDER, NESTING, FLOW), ``latencies`` (LAUNCH edges and
the calibrated lags) and ``edges`` (the edge lists and their CSR).
"""

from __future__ import annotations

import os

import numpy as np

from nodecast.errors import InputError
from nodecast.graph.edges import EdgeLists, csr
from nodecast.graph.gpu_edges import (default_stream, engine_order, event_waits, graph_order, recorded_offsets,
                                      stream_order)
from nodecast.graph.gpu_ops import (ENGINE_OF_COPY, UVM, StreamIndex, check_launch_order, gpu_table, graph_origin,
                                    launching_calls)
from nodecast.graph.host_edges import blocking_calls, host_flows, program_order, sync_edges
from nodecast.graph.latencies import calibrate
from nodecast.graph.opgraph import Engine, OpGraph, OpKind, kind_label
from nodecast.graph.order import topological_order
from nodecast.notes import NO_API, Note
from nodecast.traces.api import ApiCalls, Domain
from nodecast.traces.trace import Trace

_NS = 1e-9


def build_graph(path: str | os.PathLike[str], *, copy_engines_per_direction: int | None = None) -> OpGraph:
    """Read a trace file (any format nodecast reads) and its host records, and build its OpGraph."""
    from nodecast.traces.load import load_run

    return build(*load_run(path), copy_engines_per_direction=copy_engines_per_direction)


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
    g = gpu_table(trace)
    n_g = len(g["start"])
    n_a = len(api)
    if n_g == 0:
        raise InputError("the trace holds no kernel, copy or memset", path=source or None,
                         hint="Profile with CUDA tracing on and export again")
    api_kind = api.kinds()
    link = launching_calls(g, api)
    g["thread"] = api["thread"][np.maximum(link, 0)] if n_a else np.full(n_g, -1, np.int64)
    g["thread"] = np.where(link >= 0, g["thread"], -1)
    check_launch_order(g, api, link, trace, source)
    origin = graph_origin(g, api, link)

    # Blocking calls and what they wait for.
    blocking = blocking_calls(api_kind, g, link, n_a)
    wait_of = np.full(n_a, -1, np.int64)
    wait_rows = np.flatnonzero(blocking)
    wait_of[wait_rows] = n_g + n_a + np.arange(len(wait_rows))
    n = n_g + n_a + len(wait_rows)

    streams = StreamIndex(g, link, api)
    edges = EdgeLists.new()
    stream_order(g, edges)
    event_waits(g, api, api_kind, streams, edges, notes)
    engines, shared_engine = engine_order(g, api, edges, copy_engines_per_direction, notes)
    default_stream(g, api, streams, edges, notes)
    graph_order(g, link, edges, notes)
    release_gpu = recorded_offsets(g, link, edges, origin, notes)
    # Every edge between GPU ops is known here: launch and dependency latencies are calibrated on them.
    lat, dep = calibrate(g, api, link, blocking, edges, n_g)
    awaited_end = sync_edges(g, api, api_kind, link, blocking, wait_of, streams, edges, n_g, notes, source)
    del streams  # NOTE: the builder's temporaries go as soon as they are used: the CSR and the order come last
    first_rel = program_order(api, wait_of, edges, n_g, origin)
    del wait_of
    host_flows(api, edges, n_g)
    _summary_notes(g, api, link, notes)

    ops = _op_table(trace, g, api, link, blocking, wait_rows, awaited_end, n, n_g, n_a)
    del g, link, blocking, wait_rows, awaited_end, api_kind
    ops["release_s"][:n_g] = release_gpu
    ops["release_s"][n_g : n_g + n_a] = first_rel
    del release_gpu, first_rel
    indptr, src, kind, anchor, lag = csr(edges, n)
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


def _op_table(trace: Trace, g, api: ApiCalls, link: np.ndarray, blocking: np.ndarray, wait_rows: np.ndarray,
              awaited_end: np.ndarray, n: int, n_g: int, n_a: int) -> dict[str, np.ndarray]:
    ops = {
        "kind": np.empty(n, np.int8), "device": np.full(n, -1, np.int16), "queue": np.empty(n, np.int64),
        "engine": np.zeros(n, np.int8), "thread": np.full(n, -1, np.int64), "bytes": np.zeros(n, np.int64),
        "flops": np.full(n, np.nan), "transfer_class": np.zeros(n, np.int8), "name_id": np.full(n, -1, np.int32),
        "trace_row": np.full(n, -1, np.int32), "source_dur_s": np.empty(n, np.float64),
        "release_s": np.zeros(n, np.float64),
    }
    gk = g["kind"]  # one vocabulary: a Trace's kernel, memcpy and memset are the graph's (no SYNC rows in g)
    gs = slice(0, n_g)
    ops["kind"][gs] = gk
    ops["device"][gs] = g["device"]
    ops["queue"][gs] = g["stream"]
    ops["engine"][gs] = np.where(gk == OpKind.COPY, ENGINE_OF_COPY[g["copy"]], Engine.NONE)
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


def _cycle_error(stuck: np.ndarray, ops: dict[str, np.ndarray], trace: Trace, api: ApiCalls,
                 source: str) -> InputError:
    names = [*trace.names, *api.names]
    shown = []
    for v in stuck[:3]:
        k = kind_label(ops["kind"][v])
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
        uvm = int(np.count_nonzero(orphans & np.isin(g["copy"], UVM)))
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
