"""nvprof SQLite databases (``nvprof -o file.nvvp``) -> Trace.

Reads kernels from ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`` (plus
``_KERNEL``, which nvprof creates but usually leaves empty), with their launch
configuration and ``registersPerThread``, ``staticSharedMemory``,
``dynamicSharedMemory`` and ``localMemoryPerThread``; copies from
``_MEMCPY`` and peer copies from ``_MEMCPY2``, memsets from ``_MEMSET`` and
synchronizations from ``_SYNCHRONIZATION`` when present. Names are ids into
``StringTable(_id_, value)``; kernel names are the mangled names nvprof
stored. Timestamps are the file's integer nanoseconds.

CPU API start/end: nvprof keeps runtime and driver calls in two tables,
``CUPTI_ACTIVITY_KIND_RUNTIME`` and ``_DRIVER``. In every sample file the
activity's ``correlationId`` is the one that matches an API record (in
RUNTIME, or in DRIVER for programs that launch through the driver API, like
the LAMMPS trace); ``MEMCPY.runtimeCorrelationId`` is always 0, so it is not
used. Numbering is CUPTI's (FORMATS.md C.4): copy kinds 0-10, memory kinds
0 UNKNOWN, 1 PAGEABLE, 2 PINNED, 3 DEVICE... exactly nodecast's MemKind.
``start``/``end``, and ``bytes`` and ``copyKind`` of copies (``bytes`` of
memsets), are required: a table without one is an InputError naming it.

Host records (``read_nvprof_api``, the ``ApiCalls``): ``CUPTI_ACTIVITY_KIND_RUNTIME``
and ``_DRIVER`` (``cbid`` -> name by ``cupti_cbid``; ``processId``,
``threadId``); ``_SYNCHRONIZATION`` (``streamId``, ``cudaEventId``);
``_CUDA_EVENT``; ``_STREAM.flag``; ``_CONTEXT.nullStreamId``;
``_DEVICE.numMemcpyEngines``. ``READER`` gives both sides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nodecast.machines.device_properties import GpuProperties, nvidia_properties
from nodecast.traces import _common, cupti_cbid
from nodecast.traces._api_common import STREAM_FLAGS, attach_sync, blank, check_ends, read_table, u32_none
from nodecast.traces._sqlite import SqliteExport
from nodecast.traces.api import ApiCalls, ApiMeta, Domain
from nodecast.traces.kinds import MemKind, OpKind
from nodecast.traces.reader import SQLITE, Reader
from nodecast.traces.trace import Trace, TraceMeta
from nodecast.values import as_int, as_ints

FORMAT = "nvprof-sqlite"

CONCURRENT_KERNEL = "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMCPY2 = "CUPTI_ACTIVITY_KIND_MEMCPY2"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER = "CUPTI_ACTIVITY_KIND_DRIVER"
DEVICE = "CUPTI_ACTIVITY_KIND_DEVICE"
CONTEXT = "CUPTI_ACTIVITY_KIND_CONTEXT"

#: CUPTI memory kinds are nodecast's MemKind numbering.
MEM_KINDS: dict[int, str] = {k.value: k.name for k in MemKind}


def is_nvprof(tables: set[str]) -> bool:
    """Whether a SQLite file's table names are those of an nvprof database."""
    return "StringTable" in tables and any(t in tables for t in (CONCURRENT_KERNEL, KERNEL, MEMCPY, RUNTIME))


def read_nvprof(path: str | Path) -> Trace:
    """Read an nvprof SQLite database into a Trace (may hold zero ops)."""
    with SqliteExport(path) as db:
        return _read(db)


def read_nvprof_api(path: str | Path) -> ApiCalls:
    """The host records of an nvprof database (see the module docstring)."""
    with SqliteExport(path) as db:
        return _api(db)


#: The format's reader (``traces.formats``).
READER = Reader("nvprof", lambda probe: probe.container == SQLITE and is_nvprof(probe.tables), read_nvprof,
                read_nvprof_api)


def _read(db: SqliteExport) -> Trace:
    notes: list[str] = []
    readers = [(t, _kernels) for t in (CONCURRENT_KERNEL, KERNEL)]
    readers += [(t, _copies) for t in (MEMCPY, MEMCPY2)]
    readers += [(MEMSET, _memsets), (SYNC, _syncs)]
    sizes = [db.count(t) for t, _ in readers]
    n = sum(sizes)
    cols = _common.allocate(n)
    raw_names = np.full(n, -1, dtype=np.int64)
    lo = 0
    for (table, reader), size in zip(readers, sizes, strict=True):
        if size:
            reader(db, table, cols, slice(lo, lo + size), raw_names)
            lo += size
    cols["name_id"], names = _common.intern_ids(raw_names, db.string_table("StringTable", "_id_"))
    del raw_names
    if n and _join_api(db, cols) == 0:
        notes.append("no CPU API call matched a GPU op by correlationId")
    if names:
        notes.append("kernel names are mangled, as nvprof stores them")
    meta = TraceMeta(source=str(db.path), format=FORMAT, profiler=_profiler(db), gpus=_gpus(db), notes=notes,
                     gpu_properties=_gpu_properties(db))
    return _common.finish(cols, names, meta)


# Each reader fills its rows of the buffers. Keeping them in functions lets the
# slices (views that would pin the unsorted buffers) die before ``finish``.


def _kernels(db: SqliteExport, table: str, cols: dict[str, np.ndarray], rows: slice, raw_names: np.ndarray) -> None:
    """Kernel rows: times, launch configuration and occupancy columns, StringTable id of the name."""
    pairs = zip(("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"),
                ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"), strict=True)
    extra = [(db.col(table, "name"), -1, raw_names[rows])]
    extra += [(db.col(table, src, 0), 0, cols[dst][rows]) for src, dst in pairs]
    extra += _common.occupancy_sql(db, table, cols, rows)
    db.read_ops(table, cols, rows, extra)
    cols["kind"][rows] = OpKind.KERNEL


def _copies(db: SqliteExport, table: str, cols: dict[str, np.ndarray], rows: slice, raw_names: np.ndarray) -> None:
    """Copy rows (MEMCPY, and MEMCPY2 for peer copies with source/destination devices)."""
    # Without bytes or copyKind every copy would read as 0 B or of unknown direction.
    db.require(table, "bytes", "copyKind")
    raw = np.empty((3, rows.stop - rows.start), dtype=np.int16)
    extra = [
        ('"bytes"', 0, cols["bytes"][rows]),
        (db.code(table, "copyKind", 0), 0, raw[0]),
        (db.code(table, "srcKind", 0), 0, raw[1]),
        (db.code(table, "dstKind", 0), 0, raw[2]),
        (db.col(table, "srcDeviceId"), -1, cols["src_device"][rows]),
        (db.col(table, "dstDeviceId"), -1, cols["dst_device"][rows]),
    ]
    db.read_ops(table, cols, rows, extra)
    copy, src, dst = _common.map_copies(raw[0], raw[1], raw[2], _common.CUPTI_COPY_KIND_NAMES, MEM_KINDS)
    cols["kind"][rows] = OpKind.MEMCPY
    cols["copy_kind"][rows], cols["src_mem"][rows], cols["dst_mem"][rows] = copy, src, dst


def _memsets(db: SqliteExport, table: str, cols: dict[str, np.ndarray], rows: slice, raw_names: np.ndarray) -> None:
    """Memset rows; schema 8 has no memoryKind column, so the target stays UNKNOWN there."""
    db.require(table, "bytes")
    raw_kind = np.empty(rows.stop - rows.start, dtype=np.int16)
    extra = [('"bytes"', 0, cols["bytes"][rows]), (db.code(table, "memoryKind", 0), 0, raw_kind)]
    db.read_ops(table, cols, rows, extra)
    cols["kind"][rows] = OpKind.MEMSET
    cols["dst_mem"][rows] = _common.mem_kinds(raw_kind, MEM_KINDS)


def _syncs(db: SqliteExport, table: str, cols: dict[str, np.ndarray], rows: slice, raw_names: np.ndarray) -> None:
    """Synchronization rows; they carry a context, not a device, so the device comes from CONTEXT."""
    context = np.empty(rows.stop - rows.start, dtype=np.int64)
    db.read_ops(table, cols, rows, [(db.col(table, "contextId"), -1, context)])
    cols["kind"][rows] = OpKind.SYNC
    cols["device"][rows] = _context_devices(db, context)


def _context_devices(db: SqliteExport, context: np.ndarray) -> np.ndarray:
    """Device of each context id, from CUPTI_ACTIVITY_KIND_CONTEXT (device 0 when unknown).

    A NULL, text or out-of-range ``contextId`` / ``deviceId`` (device ids are
    kept in int16) is an InputError naming column and row.
    """
    out = np.zeros(context.shape, dtype=np.int64)
    if not {"contextId", "deviceId"} <= db.columns(CONTEXT):
        return out
    pairs = db.rows(f"SELECT contextId, deviceId FROM {CONTEXT}")
    if not pairs:
        return out
    ctx = as_ints([p[0] for p in pairs], path=db.path, field=f"{CONTEXT}.contextId")
    dev = as_ints([p[1] for p in pairs], path=db.path, field=f"{CONTEXT}.deviceId", ge=-(1 << 15), le=(1 << 15) - 1)
    order = np.argsort(ctx)
    ctx, dev = ctx[order], dev[order]
    pos = np.minimum(np.searchsorted(ctx, context), len(ctx) - 1)
    hit = ctx[pos] == context
    out[hit] = dev[pos[hit]]
    return out


def _join_api(db: SqliteExport, cols: dict[str, np.ndarray]) -> int:
    """CPU API start/end per op from RUNTIME then DRIVER by correlationId."""
    api = db.api_calls((RUNTIME, DRIVER))
    if api is None:
        return 0
    return _common.join_api_times(cols["correlation"], api[0], api[1], api[2], cols["api_start_ns"], cols["api_end_ns"])


def _profiler(db: SqliteExport) -> str:
    """``nvprof (database schema N)``: the file records its schema version, not nvprof's."""
    if "Version" in db.tables:
        rows = db.rows("SELECT * FROM Version")
        if rows and rows[0]:
            return f"nvprof (database schema {rows[0][0]})"
    return "nvprof"


def _gpus(db: SqliteExport) -> dict[int, str]:
    """Device name per device id; ``name`` is a StringTable id or, in some schemas, the text.

    An ``id`` that is NULL, text or out of range is an InputError naming column and row.
    """
    if not {"id", "name"} <= db.columns(DEVICE):
        return {}
    strings = db.string_table("StringTable", "_id_")
    gpus = {}
    for row, (dev, name) in enumerate(db.rows(f"SELECT id, name FROM {DEVICE}"), 1):
        dev = as_int(dev, path=db.path, field=f"{DEVICE}.id", row=row)
        if isinstance(name, int):
            name = strings.get(name, f"device {dev}")
        gpus[dev] = f"device {dev}" if name is None else str(name)
    return dict(sorted(gpus.items()))


#: CUPTI device-record columns that tell a GPU apart when its name does not (``GpuProperties``).
_PROPERTY_COLUMNS = ("computeCapabilityMajor", "computeCapabilityMinor", "numMultiprocessors", "globalMemorySize")


def _gpu_properties(db: SqliteExport) -> dict[int, GpuProperties]:
    """Compute capability, SM count and memory per device id from CUPTI's device record; columns a schema lacks,
    and values that are not positive integers, are left unknown (they only help tell a nameless GPU apart)."""
    columns = db.columns(DEVICE)
    if "id" not in columns:
        return {}
    exprs = ", ".join(f'"{c}"' if c in columns else "NULL" for c in _PROPERTY_COLUMNS)
    out = {}
    for row, (dev, major, minor, sms, memory) in enumerate(db.rows(f"SELECT id, {exprs} FROM {DEVICE}"), 1):
        props = nvidia_properties(major, minor, sms, memory)
        if props.known():
            out[as_int(dev, path=db.path, field=f"{DEVICE}.id", row=row)] = props
    return dict(sorted(out.items()))


# -- host records ----------------------------------------------------------------------------------

def _api(db: SqliteExport) -> ApiCalls:
    meta = ApiMeta(source=str(db.path), format="nvprof-sqlite")
    parts = []
    for table, domain, lookup in (("CUPTI_ACTIVITY_KIND_RUNTIME", Domain.RUNTIME, cupti_cbid.runtime_name),
                                  ("CUPTI_ACTIVITY_KIND_DRIVER", Domain.DRIVER, cupti_cbid.driver_name)):
        if not db.count(table):
            continue
        db.require(table, "start", "end", "cbid")
        start, end, pid, tid, corr, cbid = read_table(db, table, [
            ("start", 0), ('"end"', 0), (db.col(table, "processId", 0), 0), (db.col(table, "threadId", 0), 0),
            (db.col(table, "correlationId"), -1), ("cbid", 0)])
        check_ends(db, table, start, end)
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
            **blank(len(start))}
    table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    if db.count(table):
        sc = db.columns(table)
        corr_s, stream, event = read_table(db, table, [
            (db.col(table, "correlationId"), -1),
            (u32_none("streamId") if "streamId" in sc else "-1", -1),
            (u32_none("cudaEventId") if "cudaEventId" in sc else "-1", -1)])
        attach_sync(cols, corr_s, stream, event, None)
    table = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
    if db.count(table):
        db.require(table, "streamId")  # quoted below: SQLite would read a missing column's name as text
        corr_e, stream, event = read_table(db, table, [
            (db.col(table, "correlationId"), -1), (u32_none("streamId"), -1), (db.col(table, "eventId"), -1)])
        attach_sync(cols, corr_e, stream, event, None)
    _api_streams(db, meta)
    return ApiCalls.from_columns(cols, names, meta)


def _api_streams(db: SqliteExport, meta: ApiMeta) -> None:
    if {"streamId", "flag"} <= db.columns("CUPTI_ACTIVITY_KIND_STREAM"):
        for stream, flag in db.rows("SELECT streamId, flag FROM CUPTI_ACTIVITY_KIND_STREAM"):
            if stream is not None and isinstance(flag, int) and flag in STREAM_FLAGS:
                meta.stream_flags[int(stream)] = STREAM_FLAGS[flag]
    if {"nullStreamId", "deviceId"} <= db.columns("CUPTI_ACTIVITY_KIND_CONTEXT"):
        for stream, device in db.rows("SELECT nullStreamId, deviceId FROM CUPTI_ACTIVITY_KIND_CONTEXT"):
            if isinstance(stream, int) and isinstance(device, int):
                meta.null_streams.setdefault(device, stream)
                meta.stream_flags[stream] = "null"
    if {"id", "numMemcpyEngines"} <= db.columns("CUPTI_ACTIVITY_KIND_DEVICE"):
        for device, engines in db.rows("SELECT id, numMemcpyEngines FROM CUPTI_ACTIVITY_KIND_DEVICE"):
            if isinstance(device, int) and isinstance(engines, int):
                meta.copy_engines[device] = engines
