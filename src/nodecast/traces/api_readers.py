"""Read the host side of a trace (ApiCalls) from every format nodecast reads.

=====================  ======================================================================
format                 what is read
=====================  ======================================================================
Nsight Systems SQLite  ``CUPTI_ACTIVITY_KIND_RUNTIME`` (runtime and driver calls, ``eventClass``
                       0/1, names via ``StringIds``, thread ``globalTid``; process =
                       ``(globalTid >> 24) & 0xFFFFFF``), ``_DRIVER`` in old exports;
                       ``_SYNCHRONIZATION`` (stream/event/device of a sync call, by
                       ``correlationId``); ``_CUDA_EVENT`` (stream and event of a
                       cudaEventRecord); ``TARGET_INFO_CUDA_STREAM.flag`` (1 blocking,
                       2 non-blocking, 3 NULL: CUpti_ActivityStreamFlag),
                       ``TARGET_INFO_CUDA_NULL_STREAM``; ``TARGET_INFO_GPU.asyncEngines``
nvprof SQLite          ``CUPTI_ACTIVITY_KIND_RUNTIME`` and ``_DRIVER`` (``cbid`` -> name by
                       ``cupti_cbid``; ``processId``, ``threadId``); ``_SYNCHRONIZATION``
                       (``streamId``, ``cudaEventId``); ``_CUDA_EVENT``; ``_STREAM.flag``;
                       ``_CONTEXT.nullStreamId``; ``_DEVICE.numMemcpyEngines``
Kineto JSON            ``cuda_runtime`` / ``cuda_driver`` events (``args.correlation``),
                       ``cpu_op`` and ``user_annotation`` spans (domain CPU_OP), ``cuda_sync``
                       events (``stream``, ``wait_on_stream``,
                       ``wait_on_cuda_event_record_corr_id``)
nvprof GPU-trace CSV,  no host records: an empty ApiCalls whose note says so (the graph
Parquet/Arrow,         builder's documented fallback applies; an op table's ops run back to
op tables              back on one stream)
=====================  ======================================================================

Sync-type codes are not trusted for the meaning of a call (older nsys
exports label cudaThreadSynchronize "event sync"); the function name decides
(``api.call_kind``), the records only supply the stream, event and device.
Timestamps stay the profiler's integer nanoseconds. Nothing is written.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path
from typing import Any

import numpy as np

from nodecast.errors import InputError
from nodecast.traces import cupti_cbid
from nodecast.traces.api import ApiCalls, ApiMeta, Domain
from nodecast.inputs import input_path, named_as
from nodecast.traces import kineto
from nodecast.traces._sqlite import SqliteExport
from nodecast.traces.load import SAMPLE_PREFIX, detect_format, sample_file

# CUPTI writes "none" (no stream, no event) as uint32 0xFFFFFFFF.
_NONE_U32 = 0xFFFFFFFF
#: CUpti_ActivityStreamFlag: 1 default (blocking), 2 non-blocking, 3 NULL stream.
_STREAM_FLAGS = {1: "blocking", 2: "non-blocking", 3: "null"}


def read_api(path: str | os.PathLike[str]) -> ApiCalls:
    """The host records of any trace file nodecast reads, or of ``sample:<stem>`` (empty, with a note, when it
    has none)."""
    text = os.fspath(path)
    if text.startswith(SAMPLE_PREFIX):  # a sample shipped in the package, as load_trace reads it
        with importlib.resources.as_file(sample_file(text[len(SAMPLE_PREFIX):])) as file:
            api = _read_api(file)
        api.meta.source = text
        return api
    shown = Path(path)
    # A pipe is read through the copy load_trace made of it (nodecast.inputs); errors and the source name the pipe.
    file = input_path(shown, what="trace")
    with named_as(shown, file):
        api = _read_api(file)
    if file != shown:
        api.meta.source = str(shown)
    return api


def _read_api(path: Path) -> ApiCalls:
    fmt = detect_format(path)
    if fmt == "nsys":
        with SqliteExport(path) as db:
            return _read_nsys(db)
    if fmt == "nvprof":
        with SqliteExport(path) as db:
            return _read_nvprof(db)
    if fmt == "kineto":
        return kineto_api(kineto.load_json(path), str(path))
    what = {"nvprof-csv": "an nvprof GPU-trace CSV", "parquet": "a nodecast Parquet trace",
            "arrow": "a nodecast Arrow trace", "op-table": "an op table"}[fmt]
    return ApiCalls.empty(ApiMeta(source=str(path), format=fmt, notes=[
        f"{what} holds no host API records: GPU ops are placed by the recorded-offset fallback"]))


# -- SQLite helpers --------------------------------------------------------------------------

def _u32_none(col: str) -> str:
    """SQL reading CUPTI's 0xFFFFFFFF "none" (and NULL) as -1."""
    return f'CASE WHEN "{col}" IS NULL OR "{col}" = {_NONE_U32} OR "{col}" < 0 THEN -1 ELSE "{col}" END'


def _read_table(db: SqliteExport, table: str, exprs: list[tuple[str, int]], where: str = "") -> list[np.ndarray]:
    """Columns of ``SELECT exprs FROM table`` as int64 arrays (empty when the table is absent)."""
    n = db.count(table, where)
    outs = [np.empty(n, dtype=np.int64) for _ in exprs]
    if n:
        db.read_into(table, exprs, outs, where)
    return outs


def _check_ends(db: SqliteExport, table: str, start: np.ndarray, end: np.ndarray) -> None:
    """InputError naming the table, how many calls end before they start (a NULL end reads 0) and
    the first of them by rowid.

    No profiler writes one; read on, it would be a negative host duration,
    which the replay cannot schedule. GPU ops get the same check
    (``traces._common.check_ops``).
    """
    bad = end < start
    count = int(np.count_nonzero(bad))
    if not count:
        return
    i = int(np.argmax(bad))
    first = f"start {int(start[i])} ns, duration {int(end[i]) - int(start[i])} ns"
    try:
        row = db.rows(f'SELECT rowid, coalesce(start, 0), coalesce("end", 0) FROM "{table}" '
                      f'WHERE coalesce("end", 0) < coalesce(start, 0) ORDER BY rowid LIMIT 1')
    except InputError:  # a table without rowids: the first in reading order
        row = []
    if row and all(type(v) is int for v in row[0]):
        rowid, t0, t1 = row[0]
        first = f"rowid {rowid}, start {t0} ns, duration {t1 - t0} ns"
    raise InputError(
        f"{count:,} of {len(start):,} API calls end before they start (first: {first})",
        path=db.path,
        key=table,
        hint="The file is damaged or was edited; export or record the trace again",
    )


def _attach_sync(cols: dict[str, np.ndarray], corr: np.ndarray, stream: np.ndarray, event: np.ndarray,
                 device: np.ndarray | None) -> int:
    """Copy stream/event/device of synchronization or event records onto the calls with the same
    correlation id (first call wins); returns how many records matched a call."""
    if len(corr) == 0 or len(cols["correlation"]) == 0:
        return 0
    order = np.argsort(cols["correlation"], kind="stable")
    keys = cols["correlation"][order]
    pos = np.minimum(np.searchsorted(keys, corr), len(keys) - 1)
    hit = (keys[pos] == corr) & (corr > 0)
    rows = order[pos[hit]]
    cols["stream"][rows] = np.where(stream[hit] >= 0, stream[hit], cols["stream"][rows])
    cols["event"][rows] = np.where(event[hit] >= 0, event[hit], cols["event"][rows])
    if device is not None:
        cols["device"][rows] = np.where(device[hit] >= 0, device[hit], cols["device"][rows])
    return int(np.count_nonzero(hit))


def _blank(n: int) -> dict[str, np.ndarray]:
    return {"stream": np.full(n, -1, np.int64), "event": np.full(n, -1, np.int64), "device": np.full(n, -1, np.int16)}


# -- Nsight Systems -----------------------------------------------------------------------------

def _read_nsys(db: SqliteExport) -> ApiCalls:
    meta = ApiMeta(source=str(db.path), format="nsys-sqlite")
    parts = []
    for table, domain in (("CUPTI_ACTIVITY_KIND_RUNTIME", None), ("CUPTI_ACTIVITY_KIND_DRIVER", Domain.DRIVER)):
        if not db.count(table):
            continue
        db.require(table, "start", "end")
        cls_sql = db.code(table, "eventClass", 0) if domain is None else str(int(domain))
        start, end, tid, corr, name, cls = _read_table(db, table, [
            ("start", 0), ('"end"', 0), (db.col(table, "globalTid", 0), 0),
            (db.col(table, "correlationId"), -1), (db.col(table, "nameId"), -1), (cls_sql, 0)])
        _check_ends(db, table, start, end)
        parts.append((start, end, tid, corr, name, np.where(cls == 1, Domain.DRIVER, Domain.RUNTIME)))
    if not parts:
        meta.notes.append("no CUDA API records (CUPTI_ACTIVITY_KIND_RUNTIME is empty): "
                          "GPU ops are placed by the recorded-offset fallback")
        return ApiCalls.empty(meta)
    start, end, tid, corr, raw_name, domain = (np.concatenate(c) for c in zip(*parts, strict=True))
    strings = db.string_table("StringIds", "id")
    uniq, inverse = np.unique(raw_name, return_inverse=True)
    names = [strings.get(int(i), f"string#{int(i)}") for i in uniq]
    cols = {"start_ns": start, "end_ns": end, "thread": tid, "process": (tid >> 24) & 0xFFFFFF,
            "correlation": corr, "name_id": inverse.astype(np.int32), "domain": domain, **_blank(len(start))}
    _nsys_sync_records(db, cols, meta)
    _nsys_streams(db, meta)
    return ApiCalls.from_columns(cols, names, meta)


def _nsys_sync_records(db: SqliteExport, cols: dict[str, np.ndarray], meta: ApiMeta) -> None:
    table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    if db.count(table):
        corr, stream, event, device = _read_table(db, table, [
            (db.col(table, "correlationId"), -1), (_u32_none("streamId") if "streamId" in db.columns(table) else "-1", -1),
            (_u32_none("eventId") if "eventId" in db.columns(table) else "-1", -1),
            (db.col(table, "deviceId", -1), -1)])
        _attach_sync(cols, corr, stream, event, device)
    table = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
    if db.count(table):
        db.require(table, "streamId")  # quoted below: SQLite would read a missing column's name as text
        corr, stream, event = _read_table(db, table, [
            (db.col(table, "correlationId"), -1), (_u32_none("streamId"), -1), (db.col(table, "eventId"), -1)])
        _attach_sync(cols, corr, stream, event, None)


def _nsys_streams(db: SqliteExport, meta: ApiMeta) -> None:
    if {"streamId", "flag"} <= db.columns("TARGET_INFO_CUDA_STREAM"):
        for stream, flag in db.rows("SELECT streamId, flag FROM TARGET_INFO_CUDA_STREAM"):
            if stream is not None and isinstance(flag, int) and flag in _STREAM_FLAGS:
                meta.stream_flags[int(stream)] = _STREAM_FLAGS[flag]
    if {"streamId", "deviceId"} <= db.columns("TARGET_INFO_CUDA_NULL_STREAM"):
        for stream, device in db.rows("SELECT streamId, deviceId FROM TARGET_INFO_CUDA_NULL_STREAM"):
            if stream is not None and device is not None:
                meta.null_streams[int(device)] = int(stream)
    gcols = db.columns("TARGET_INFO_GPU")
    if "asyncEngines" in gcols:
        key = "cuDevice" if "cuDevice" in gcols else "id" if "id" in gcols else None
        if key:
            for device, engines in db.rows(f'SELECT "{key}", asyncEngines FROM TARGET_INFO_GPU'):
                if isinstance(device, int) and device >= 0 and isinstance(engines, int):
                    meta.copy_engines.setdefault(device, engines)


# -- nvprof ---------------------------------------------------------------------------------------

def _read_nvprof(db: SqliteExport) -> ApiCalls:
    meta = ApiMeta(source=str(db.path), format="nvprof-sqlite")
    parts = []
    for table, domain, lookup in (("CUPTI_ACTIVITY_KIND_RUNTIME", Domain.RUNTIME, cupti_cbid.runtime_name),
                                  ("CUPTI_ACTIVITY_KIND_DRIVER", Domain.DRIVER, cupti_cbid.driver_name)):
        if not db.count(table):
            continue
        db.require(table, "start", "end", "cbid")
        start, end, pid, tid, corr, cbid = _read_table(db, table, [
            ("start", 0), ('"end"', 0), (db.col(table, "processId", 0), 0), (db.col(table, "threadId", 0), 0),
            (db.col(table, "correlationId"), -1), ("cbid", 0)])
        _check_ends(db, table, start, end)
        parts.append((start, end, pid, tid, corr, cbid, np.full(len(start), domain, np.int8), lookup))
    if not parts:
        meta.notes.append("no CUDA API records (CUPTI_ACTIVITY_KIND_RUNTIME/_DRIVER are empty): "
                          "GPU ops are placed by the recorded-offset fallback")
        return ApiCalls.empty(meta)
    names: list[str] = []
    index: dict[str, int] = {}
    name_ids = []
    for *_, cbid, _dom, lookup in parts:
        uniq, inverse = np.unique(cbid, return_inverse=True)
        table = np.array([index.setdefault(lookup(c), len(index)) for c in uniq], dtype=np.int32)
        name_ids.append(table[inverse])
    names = list(index)
    start, end, pid, tid, corr = (np.concatenate([p[i] for p in parts]) for i in range(5))
    cols = {"start_ns": start, "end_ns": end, "process": pid, "thread": tid, "correlation": corr,
            "name_id": np.concatenate(name_ids), "domain": np.concatenate([p[6] for p in parts]),
            **_blank(len(start))}
    table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    if db.count(table):
        sc = db.columns(table)
        corr_s, stream, event = _read_table(db, table, [
            (db.col(table, "correlationId"), -1),
            (_u32_none("streamId") if "streamId" in sc else "-1", -1),
            (_u32_none("cudaEventId") if "cudaEventId" in sc else "-1", -1)])
        _attach_sync(cols, corr_s, stream, event, None)
    table = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
    if db.count(table):
        db.require(table, "streamId")  # quoted below: SQLite would read a missing column's name as text
        corr_e, stream, event = _read_table(db, table, [
            (db.col(table, "correlationId"), -1), (_u32_none("streamId"), -1), (db.col(table, "eventId"), -1)])
        _attach_sync(cols, corr_e, stream, event, None)
    _nvprof_streams(db, meta)
    return ApiCalls.from_columns(cols, names, meta)


def _nvprof_streams(db: SqliteExport, meta: ApiMeta) -> None:
    if {"streamId", "flag"} <= db.columns("CUPTI_ACTIVITY_KIND_STREAM"):
        for stream, flag in db.rows("SELECT streamId, flag FROM CUPTI_ACTIVITY_KIND_STREAM"):
            if stream is not None and isinstance(flag, int) and flag in _STREAM_FLAGS:
                meta.stream_flags[int(stream)] = _STREAM_FLAGS[flag]
    if {"nullStreamId", "deviceId"} <= db.columns("CUPTI_ACTIVITY_KIND_CONTEXT"):
        for stream, device in db.rows("SELECT nullStreamId, deviceId FROM CUPTI_ACTIVITY_KIND_CONTEXT"):
            if isinstance(stream, int) and isinstance(device, int):
                meta.null_streams.setdefault(device, stream)
                meta.stream_flags[stream] = "null"
    if {"id", "numMemcpyEngines"} <= db.columns("CUPTI_ACTIVITY_KIND_DEVICE"):
        for device, engines in db.rows("SELECT id, numMemcpyEngines FROM CUPTI_ACTIVITY_KIND_DEVICE"):
            if isinstance(device, int) and isinstance(engines, int):
                meta.copy_engines[device] = engines


# -- Kineto ---------------------------------------------------------------------------------------

_API_CATS = {"cuda_runtime": Domain.RUNTIME, "cuda_driver": Domain.DRIVER}
_SPAN_CATS = ("cpu_op", "user_annotation")


def kineto_api(doc: Any, source: str = "") -> ApiCalls:
    """ApiCalls of a parsed Kineto document (``kineto.load_json``)."""
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
    start = _ns([e.get("ts") for e in calls], "ts", source, what)
    dur = _ns([e.get("dur", 0) for e in calls], "dur", source, what)
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
            "name_id": name_id, "domain": domain, **_blank(n)}
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
        stream.append(-1 if s in (-1, _NONE_U32) else s)
        event.append(record)
        device.append(_int(a.get("device"), -1))
        if record > 0:
            rec_corr.append(record)
            rec_stream.append(_int(a.get("wait_on_stream"), -1))
    _attach_sync(cols, np.array(corr, np.int64), np.array(stream, np.int64), np.array(event, np.int64),
                 np.array(device, np.int64))
    if rec_corr:
        rc = np.array(rec_corr, np.int64)
        _attach_sync(cols, rc, np.array(rec_stream, np.int64), rc, None)


def _ns(raw: list[Any], field: str, source: str, events: str) -> np.ndarray:
    """Kineto microsecond values -> int64 ns (``kineto.us_text_to_ns``); InputError naming the field."""
    try:
        return kineto.us_text_to_ns(raw)
    except kineto.NumberError as exc:
        raise InputError(
            f"{exc.reason} in {exc.count:,} of {len(raw):,} {events} (first: {exc.first!r})",
            path=source or None,
            key=field,
            hint="The trace is damaged or was edited; save it again from the profiler",
        ) from None


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
    src_ts = _ns([p[0][1] for p in pairs], "ts", source, what)
    dst_ts = _ns([p[1][1] for p in pairs], "ts", source, what)
    src_tid = np.array([p[0][0] for p in pairs], dtype=np.int64)
    dst_tid = np.array([p[1][0] for p in pairs], dtype=np.int64)
    return np.stack([src_tid, src_ts, dst_tid, dst_ts], axis=1)
