"""The trace's GPU ops as the graph builder reads them: their columns, the API call that launched each, the
graph's origin, and which op of a stream was launched before or after a time (``StreamIndex``), including the
work an event record captured.

Times are the profiler's integer nanoseconds; GPU ops are indexed in the
order of ``gpu_table`` (the Trace's rows without its synchronization records).
"""

from __future__ import annotations

import numpy as np

from nodecast.errors import InputError
from nodecast.graph.opgraph import Engine
from nodecast.traces.api import ApiCalls, ApiKind, Domain
from nodecast.traces.kinds import CopyKind, OpKind
from nodecast.traces.trace import Trace


#: Copy engine class of a copy, by its CopyKind code.
ENGINE_OF_COPY = np.zeros(len(CopyKind), dtype=np.int8)
ENGINE_OF_COPY[CopyKind.HTOD] = Engine.HTOD
ENGINE_OF_COPY[CopyKind.DTOH] = Engine.DTOH
ENGINE_OF_COPY[CopyKind.DTOD] = Engine.DTOD
ENGINE_OF_COPY[CopyKind.PEER] = Engine.PEER
ENGINE_OF_COPY[CopyKind.HTOH] = Engine.HTOH
ENGINE_OF_COPY[CopyKind.UVM_HTOD] = Engine.HTOD
ENGINE_OF_COPY[CopyKind.UVM_DTOH] = Engine.DTOH
ENGINE_OF_COPY[CopyKind.UVM_DTOD] = Engine.DTOD

#: Unified-memory page migrations: made by the driver on page faults, not issued to a stream.
UVM = (CopyKind.UVM_HTOD, CopyKind.UVM_DTOH, CopyKind.UVM_DTOD)


def gpu_table(trace: Trace) -> dict[str, np.ndarray]:
    """GPU ops of the trace (no SYNC rows): their rows and the columns the builder needs."""
    keep = trace["kind"] != OpKind.SYNC
    rows = np.flatnonzero(keep).astype(np.int32)  # the graph's trace_row dtype
    every = len(rows) == len(trace)  # no sync rows: use the Trace's own columns, no copy

    def col(name: str) -> np.ndarray:
        return trace[name] if every else trace[name][rows]

    return {"row": rows, "kind": col("kind"), "copy": col("copy_kind"), "dst_mem": col("dst_mem"),
            "bytes": col("bytes"), "start": col("start_ns"), "end": col("end_ns"), "device": col("device"),
            "stream": col("stream"), "corr": col("correlation"), "name": col("name_id"),
            "tclass": trace.transfer_class if every else trace.transfer_class[rows]}


def launching_calls(g: dict[str, np.ndarray], api: ApiCalls) -> np.ndarray:
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


def check_launch_order(g, api: ApiCalls, link: np.ndarray, trace: Trace, source: str) -> None:
    """InputError when a GPU op starts before the API call that launched it (no profiler writes that)."""
    has = link >= 0
    if not has.any():
        return
    early = np.flatnonzero(has & (g["start"] < np.where(has, api["start_ns"][np.maximum(link, 0)], 0)))
    if len(early) == 0:
        return
    i = int(early[0])
    name = trace.names[g["name"][i]] if g["name"][i] >= 0 else OpKind(int(g["kind"][i])).name.lower()
    call = api.names[api["name_id"][link[i]]] if api["name_id"][link[i]] >= 0 else "its call"
    raise InputError(
        f"{len(early):,} GPU ops start before the API call that launched them (first: {name[:60]} "
        f"at {int(g['start'][i])} ns, correlation id {int(g['corr'][i])}, launched by {call} at "
        f"{int(api['start_ns'][link[i]])} ns)",
        path=source or None,
        hint="The GPU and CPU records contradict each other; export the profile again",
    )


def graph_origin(g, api: ApiCalls, link: np.ndarray) -> int:
    """The trace's first timestamp: the first host record, or an earlier GPU op without API record."""
    firsts = []
    if len(api):
        firsts.append(int(api["start_ns"].min()))
    if (link < 0).any():
        firsts.append(int(g["start"][link < 0].min()))
    return min(firsts) if firsts else int(g["start"].min())


class StreamIndex:
    """"Last op of a stream launched before time t" and "first launched after t", vectorized.

    Streams are (device, stream) pairs coded densely; an op's launch time is
    its API call's start, or its recorded start when it has no API record.
    """

    def __init__(self, g: dict[str, np.ndarray], link: np.ndarray, api: ApiCalls) -> None:
        n = len(g["start"])
        call_start = api["start_ns"][np.maximum(link, 0)] if len(api) else np.zeros(n, np.int64)
        self.launch = np.where(link >= 0, call_start, g["start"])
        # Page migrations are not stream work: no stream query ever returns one.
        member = np.flatnonzero(~np.isin(g["copy"], UVM))
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


def event_captures(api: ApiCalls, api_kind: np.ndarray, rows: np.ndarray, streams: StreamIndex,
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
