"""Edges between GPU ops (see ``build``'s module docstring for the sources of each): STREAM_ORDER,
EVENT_WAIT, ENGINE_ORDER, DEFAULT_STREAM, GRAPH_ORDER, and the RECORDED_OFFSET fallback for GPU ops without an
API record. Each function adds its edges to the builder's ``EdgeLists`` and its assumptions to ``notes``."""

from __future__ import annotations

import numpy as np

from nodecast.graph.edges import EdgeLists
from nodecast.graph.gpu_ops import ENGINE_OF_COPY, UVM, StreamIndex, event_captures
from nodecast.graph.opgraph import Anchor, EdgeKind, Engine
from nodecast.traces.api import ApiCalls, ApiKind
from nodecast.traces.kinds import OpKind

_NS = 1e-9


def stream_order(g, edges: EdgeLists) -> None:
    """STREAM_ORDER between consecutive ops of each (device, stream), in recorded order; no UVM migrations."""
    chained = ~np.isin(g["copy"], UVM)
    idx = np.flatnonzero(chained)
    order = idx[np.lexsort((g["start"][idx], g["stream"][idx], g["device"][idx]))]
    same = (g["device"][order[1:]] == g["device"][order[:-1]]) & (g["stream"][order[1:]] == g["stream"][order[:-1]])
    edges.add(order[:-1][same], order[1:][same], EdgeKind.STREAM_ORDER, Anchor.END)


def event_waits(g, api: ApiCalls, api_kind: np.ndarray, streams: StreamIndex, edges: EdgeLists,
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
    captured, missing = event_captures(api, api_kind, known, streams, g)
    if missing:
        notes.append(f"{missing:,} stream waits are on an event never recorded before them: no dependency, "
                     "as CUDA specifies")
    for col in captured:
        ok = (col >= 0) & (target >= 0) & (col != target)
        edges.add(col[ok], target[ok], EdgeKind.EVENT_WAIT, Anchor.END)


def _blind_waits(g, api: ApiCalls, rows: np.ndarray, streams: StreamIndex, edges: EdgeLists) -> int:
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


def engine_order(g, api: ApiCalls, edges: EdgeLists, per_direction: int | None,
                  notes: list[str]) -> tuple[dict[int, int], list[int]]:
    """ENGINE_ORDER chains of copies per (device, engine); returns the engines used per device (per direction, or
    in all on the devices of the list: one asynchronous engine serving every direction)."""
    engines: dict[int, int] = {}
    shared: list[int] = []
    copies = np.flatnonzero((g["kind"] == OpKind.MEMCPY) & ~np.isin(g["copy"], UVM))
    engine = ENGINE_OF_COPY[g["copy"][copies]]
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


def default_stream(g, api: ApiCalls, streams: StreamIndex, edges: EdgeLists, notes: list[str]) -> None:
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


def graph_order(g, link: np.ndarray, edges: EdgeLists, notes: list[str]) -> None:
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


def recorded_offsets(g, link: np.ndarray, edges: EdgeLists, origin: int, notes: list[str]) -> np.ndarray:
    """RECORDED_OFFSET edges for GPU ops without API record; returns the GPU ops' release times (s)."""
    n_g = len(g["start"])
    release = np.zeros(n_g, np.float64)
    orphans = np.flatnonzero(link < 0)
    if len(orphans) == 0:
        return release
    # The previous op of the same stream if there is one (page migrations: of the device).
    stream = np.where(np.isin(g["copy"], UVM), -2, g["stream"])
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
