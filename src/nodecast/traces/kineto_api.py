"""The host records (``ApiCalls``) of a PyTorch profiler (Kineto) trace.

``cuda_runtime`` / ``cuda_driver`` events are the API calls (``args.correlation``
joins them to their GPU ops), ``cpu_op`` and ``user_annotation`` spans (domain
CPU_OP) the framework work enclosing them; ``cuda_sync`` events (newer PyTorch
profilers) give the stream, event and device of synchronizations (``stream``,
``wait_on_stream``, ``wait_on_cuda_event_record_corr_id``), and ``fwdbwd``
flows the autograd dependencies between threads. Kineto records no stream
creation flags. Timestamps are Kineto's microseconds, converted to integer
nanoseconds exactly (``kineto_json.us_text_to_ns``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nodecast.errors import InputError
from nodecast.traces._api_common import NONE_U32, attach_sync, blank
from nodecast.traces.api import ApiCalls, ApiMeta, Domain
from nodecast.traces.kineto_json import load_json, ns_or_error

_API_CATS = {"cuda_runtime": Domain.RUNTIME, "cuda_driver": Domain.DRIVER}
_SPAN_CATS = ("cpu_op", "user_annotation")


def read_kineto_api(path: str | Path) -> ApiCalls:
    """The host records of a Kineto trace file (``.json`` or ``.json.gz``)."""
    return kineto_api(load_json(Path(path)), str(path))


def kineto_api(doc: Any, source: str = "") -> ApiCalls:
    """ApiCalls of a parsed Kineto document (``kineto_json.load_json``)."""
    meta = ApiMeta(source=source, format="kineto-json")
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError("no traceEvents list", path=source or None, hint="Load a Kineto/Chrome trace")
    calls = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"
             and (e.get("cat") in _API_CATS or e.get("cat") in _SPAN_CATS)]
    if not any(e.get("cat") in _API_CATS for e in calls):
        meta.notes.append("no cuda_runtime/cuda_driver events: GPU ops are placed by the recorded-offset fallback")
        return ApiCalls.empty(meta)
    n = len(calls)
    what = "host events (cuda_runtime, cuda_driver, cpu_op, user_annotation)"
    start = ns_or_error([e.get("ts") for e in calls], "ts", source, what)
    dur = ns_or_error([e.get("dur", 0) for e in calls], "dur", source, what)
    if (dur < 0).any():
        raise InputError(f"{int(np.count_nonzero(dur < 0)):,} {what} have a negative dur",
                         path=source or None, key="dur", hint="The trace is damaged; save it again from the profiler")
    args = [e.get("args") if isinstance(e.get("args"), dict) else {} for e in calls]
    corr = np.fromiter((_int(a.get("correlation"), -1) for a in args), dtype=np.int64, count=n)
    pid = np.fromiter((_int(e.get("pid"), 0) for e in calls), dtype=np.int64, count=n)
    tid = np.fromiter((_int(e.get("tid"), 0) for e in calls), dtype=np.int64, count=n)
    domain = np.fromiter((_API_CATS.get(e.get("cat"), Domain.CPU_OP) for e in calls), dtype=np.int8, count=n)
    corr[domain == Domain.CPU_OP] = -1
    index: dict[str, int] = {}
    name_id = np.fromiter((index.setdefault(str(e.get("name", "")), len(index)) for e in calls), np.int32, n)
    cols = {"start_ns": start, "end_ns": start + dur, "process": pid, "thread": tid, "correlation": corr,
            "name_id": name_id, "domain": domain, **blank(n)}
    _kineto_syncs(events, cols, meta)
    meta.host_flows = _kineto_flows(events, source)
    meta.notes.append("Kineto records no stream creation flags: assumed no implicit legacy-default-stream "
                      "synchronisation (PyTorch creates its side streams non-blocking)")
    return ApiCalls.from_columns(cols, list(index), meta)


def _kineto_syncs(events: list[Any], cols: dict[str, np.ndarray], meta: ApiMeta) -> None:
    """Stream/event/device of sync calls from ``cuda_sync`` events (newer PyTorch profilers).

    A ``Stream Wait Event`` names the correlation id of the cudaEventRecord it
    waits for (``wait_on_cuda_event_record_corr_id``) and that record's stream
    (``wait_on_stream``): the record's correlation id serves as event id.
    """
    syncs = [e for e in events if isinstance(e, dict) and e.get("cat") == "cuda_sync"
             and isinstance(e.get("args"), dict)]
    if not syncs:
        return
    corr, stream, event, device = [], [], [], []
    rec_corr, rec_stream = [], []
    for e in syncs:
        a = e["args"]
        c = _int(a.get("correlation"), -1)
        s = _int(a.get("stream"), -1)
        record = _int(a.get("wait_on_cuda_event_record_corr_id"), -1)
        corr.append(c)
        stream.append(-1 if s in (-1, NONE_U32) else s)
        event.append(record)
        device.append(_int(a.get("device"), -1))
        if record > 0:
            rec_corr.append(record)
            rec_stream.append(_int(a.get("wait_on_stream"), -1))
    attach_sync(cols, np.array(corr, np.int64), np.array(stream, np.int64), np.array(event, np.int64),
                 np.array(device, np.int64))
    if rec_corr:
        rc = np.array(rec_corr, np.int64)
        attach_sync(cols, rc, np.array(rec_stream, np.int64), rc, None)


def _int(value: Any, default: int) -> int:
    """An integer field of a JSON event, ``default`` when absent or not an integer."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return default
    return default


def _kineto_flows(events: list[Any], source: str) -> np.ndarray:
    """Kineto ``fwdbwd`` flows (autograd: a backward op runs after its forward op) as an
    (n, 4) int64 array of (forward thread, forward start ns, backward thread, backward start ns).

    Both ends bind to the start of a ``cpu_op`` on the flow's thread, so the
    builder finds the ops by (thread, start).
    """
    starts: dict[Any, tuple[int, Any]] = {}
    ends: dict[Any, tuple[int, Any]] = {}
    for e in events:
        if isinstance(e, dict) and e.get("cat") == "fwdbwd" and e.get("ph") in ("s", "f"):
            (starts if e["ph"] == "s" else ends)[e.get("id")] = (_int(e.get("tid"), 0), e.get("ts", 0))
    pairs = [(starts[i], ends[i]) for i in starts if i in ends]
    if not pairs:
        return np.zeros((0, 4), dtype=np.int64)
    what = "fwdbwd flow events"
    src_ts = ns_or_error([p[0][1] for p in pairs], "ts", source, what)
    dst_ts = ns_or_error([p[1][1] for p in pairs], "ts", source, what)
    src_tid = np.array([p[0][0] for p in pairs], dtype=np.int64)
    dst_tid = np.array([p[1][0] for p in pairs], dtype=np.int64)
    return np.stack([src_tid, src_ts, dst_tid, dst_ts], axis=1)
