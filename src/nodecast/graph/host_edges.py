"""Edges of the host side (see ``build``'s module docstring for the sources of each): which calls block, the
SYNC edges of their WAIT ops, PROGRAM_ORDER and NESTING per host thread, and Kineto's FLOW edges between
threads. Host records are indexed after the GPU ops (``n_g`` + ApiCalls row)."""

from __future__ import annotations

import numpy as np

from nodecast.graph.edges import EdgeLists
from nodecast.graph.gpu_ops import StreamIndex, event_captures
from nodecast.graph.opgraph import Anchor, EdgeKind
from nodecast.traces.api import ApiCalls, ApiKind
from nodecast.traces.kinds import CopyKind, MemKind, TransferClass

_NS = 1e-9

#: Asynchronous copies that block the host (pageable or managed host memory, host-to-host; host memory of a kind
#: the trace does not record counts as pageable, as the transfer models take it).
_BLOCKING_ASYNC = (TransferClass.HTOD_PAGEABLE, TransferClass.DTOH_PAGEABLE, TransferClass.HTOD_MANAGED,
                   TransferClass.DTOH_MANAGED, TransferClass.HTOH, TransferClass.HTOD_UNKNOWN,
                   TransferClass.DTOH_UNKNOWN)


def blocking_calls(api_kind: np.ndarray, g, link: np.ndarray, n_a: int) -> np.ndarray:
    """Which host records block the calling thread (see SYNC in ``build``'s module docstring)."""
    blocking = np.isin(api_kind, (ApiKind.DEVICE_SYNC, ApiKind.STREAM_SYNC, ApiKind.EVENT_SYNC, ApiKind.FREE_SYNC))
    has = link >= 0
    rows, kinds = link[has], api_kind[link[has]]
    copy, tclass, dst_mem = g["copy"][has], g["tclass"][has], g["dst_mem"][has]
    sync_copy = (kinds == ApiKind.MEMCPY) & (copy != CopyKind.DTOD)
    async_copy = (kinds == ApiKind.MEMCPY_ASYNC) & np.isin(tclass, _BLOCKING_ASYNC)
    pinned_set = (kinds == ApiKind.MEMSET) & (dst_mem == MemKind.PINNED)
    blocking[rows[sync_copy | async_copy | pinned_set]] = True
    return blocking


def sync_edges(g, api: ApiCalls, api_kind: np.ndarray, link: np.ndarray, blocking: np.ndarray,
                wait_of: np.ndarray, streams: StreamIndex, edges: EdgeLists, n_g: int, notes: list[str],
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
        captured, missing = event_captures(api, api_kind, ev_rows, streams, g)
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


def program_order(api: ApiCalls, wait_of: np.ndarray, edges: EdgeLists, n_g: int, origin: int) -> np.ndarray:
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


def host_flows(api: ApiCalls, edges: EdgeLists, n_g: int) -> None:
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
