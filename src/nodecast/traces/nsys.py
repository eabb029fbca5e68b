"""Nsight Systems SQLite exports (``nsys export --type sqlite``) -> Trace.

Reads kernels (``CUPTI_ACTIVITY_KIND_KERNEL``, with their launch
configuration and ``registersPerThread``, ``staticSharedMemory``,
``dynamicSharedMemory`` and ``localMemoryPerThread``), copies (``_MEMCPY``), memsets
(``_MEMSET``) and synchronizations (``_SYNCHRONIZATION``, kind SYNC); CPU API
start/end come from ``CUPTI_ACTIVITY_KIND_RUNTIME`` (runtime and driver calls,
told apart by ``eventClass``) joined on ``correlationId``. Timestamps are the
file's integer nanoseconds.

Host records (``read_nsys_api``, the ``ApiCalls``): ``CUPTI_ACTIVITY_KIND_RUNTIME``
(runtime and driver calls, ``eventClass`` 0/1, names via ``StringIds``, thread
``globalTid``; process = ``(globalTid >> 24) & 0xFFFFFF``), ``_DRIVER`` in old
exports; ``_SYNCHRONIZATION`` (stream/event/device of a sync call, by
``correlationId``); ``_CUDA_EVENT`` (stream and event of a cudaEventRecord);
``TARGET_INFO_CUDA_STREAM.flag`` (1 blocking, 2 non-blocking, 3 NULL:
CUpti_ActivityStreamFlag), ``TARGET_INFO_CUDA_NULL_STREAM``;
``TARGET_INFO_GPU.asyncEngines``. ``READER`` gives both sides.

Numbering (FORMATS.md C.3): copy kinds and memory kinds are decoded through
the file's ``ENUM_CUDA_MEMCPY_OPER`` / ``ENUM_CUDA_MEM_KIND`` tables when it
has them, else through the documented numbering. nsys memory kinds are
shifted against CUPTI's (nsys 0 = PAGEABLE ... 7 = UNKNOWN), which is why they
are always decoded by name. Schemas differ between nsys versions, so every
optional column is checked before it is read; ``start``/``end`` and, for
copies, ``bytes`` and ``copyKind`` (memsets: ``bytes``) are required, and a
table without one is an InputError naming table and column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nodecast.traces import _common
from nodecast.traces._api_common import STREAM_FLAGS, attach_sync, blank, check_ends, read_table, u32_none
from nodecast.traces._sqlite import SqliteExport
from nodecast.traces.api import ApiCalls, ApiMeta, Domain
from nodecast.traces.kinds import OpKind
from nodecast.traces.reader import SQLITE, Reader
from nodecast.traces.trace import Trace, TraceMeta
from nodecast.values import as_int, as_ints

FORMAT = "nsys-sqlite"

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER = "CUPTI_ACTIVITY_KIND_DRIVER"

#: Tables that make a SQLite file an nsys export (any one of them, with StringIds).
MARKER_TABLES = ("StringIds", "TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU")

#: ``ENUM_CUDA_MEMCPY_OPER`` as documented, for exports without the table.
DEFAULT_COPY_KINDS: dict[int, str] = {
    **_common.CUPTI_COPY_KIND_NAMES,
    11: "UVM_HTOD",
    12: "UVM_DTOH",
    13: "UVM_DTOD",
}

#: ``ENUM_CUDA_MEM_KIND`` as documented (shifted by one against CUPTI), for exports without the table.
DEFAULT_MEM_KINDS: dict[int, str] = {
    0: "PAGEABLE",
    1: "PINNED",
    2: "DEVICE",
    3: "ARRAY",
    4: "MANAGED",
    5: "DEVICE_STATIC",
    6: "MANAGED_STATIC",
    7: "UNKNOWN",
}

# CUPTI writes "no stream" (context/device synchronization) as uint32 0xFFFFFFFF.
_NO_STREAM = 0xFFFFFFFF


def is_nsys(tables: set[str]) -> bool:
    """Whether a SQLite file's table names are those of an nsys export."""
    return "StringIds" in tables and any(t in tables for t in (KERNEL, MEMCPY, MEMSET, RUNTIME, *MARKER_TABLES))


def read_nsys(path: str | Path) -> Trace:
    """Read an Nsight Systems SQLite export into a Trace (may hold zero ops)."""
    with SqliteExport(path) as db:
        return _read(db)


def read_nsys_api(path: str | Path) -> ApiCalls:
    """The host records of an Nsight Systems SQLite export (see the module docstring)."""
    with SqliteExport(path) as db:
        return _api(db)


#: The format's reader (``traces.formats``).
READER = Reader("nsys", lambda probe: probe.container == SQLITE and is_nsys(probe.tables), read_nsys, read_nsys_api)


def _enum(db: SqliteExport, table: str, prefix: str, default: dict[int, str], notes: list[str]) -> dict[int, str]:
    """An nsys ENUM table as {number: short name}, or the documented default when absent.

    An ``id`` that is not an integer (NULL, text, a real such as inf) is an
    InputError naming table, column and row: guessing would decode every copy wrongly.
    Rows without a name decode as unknown.
    """
    if table not in db.tables:
        notes.append(f"no {table} table: decoded with the documented numbering")
        return dict(default)
    ids_and_names = db.rows(f'SELECT id, name FROM "{table}"')
    ids = as_ints([i for i, _ in ids_and_names], path=db.path, field=f"{table}.id")
    # Ids beyond 0..255 can never match: ``SqliteExport.code`` reads such codes as -1.
    return {int(i): str(name).removeprefix(prefix) for i, (_, name) in zip(ids, ids_and_names, strict=True)
            if name is not None and 0 <= i <= 255}


def _read(db: SqliteExport) -> Trace:
    notes: list[str] = []
    sizes = {t: db.count(t) for t in (KERNEL, MEMCPY, MEMSET, SYNC)}
    cols = _common.allocate(sum(sizes.values()))
    names: list[str] = []
    lo = 0
    for table, reader in ((KERNEL, _kernels), (MEMCPY, _copies), (MEMSET, _memsets), (SYNC, _syncs)):
        if sizes[table]:
            rows = slice(lo, lo + sizes[table])
            names = reader(db, cols, rows, notes) or names
            lo = rows.stop
    if lo and _join_api(db, cols) == 0:
        notes.append("no CPU API call matched a GPU op by correlationId")
    meta = TraceMeta(source=str(db.path), format=FORMAT, profiler=_profiler(db), gpus=_gpus(db), notes=notes)
    return _common.finish(cols, names, meta)


# Each reader fills its rows of the buffers. Keeping them in functions lets the
# slices (views that would pin the unsorted buffers) die before ``finish``.
_STREAM = f"CASE WHEN streamId = {_NO_STREAM} THEN -1 ELSE streamId END"


def _stream_sql(db: SqliteExport, table: str) -> str:
    """Stream id expression: 0xFFFFFFFF (no stream) reads -1."""
    return _STREAM if "streamId" in db.columns(table) else "-1"


def _launch_config(
    db: SqliteExport, table: str, cols: dict[str, np.ndarray], rows: slice
) -> list[tuple[str, int, np.ndarray]]:
    """(SQL, default, buffer) for gridX..blockZ and the occupancy columns (``OCCUPANCY_SOURCES``)."""
    pairs = zip(("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"),
                ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"), strict=True)
    out = [(db.col(table, src, 0), 0, cols[dst][rows]) for src, dst in pairs]
    return out + _common.occupancy_sql(db, table, cols, rows)


def _kernels(db: SqliteExport, cols: dict[str, np.ndarray], rows: slice, notes: list[str]) -> list[str]:
    """Kernel rows; returns the kernel names (demangled, else short names)."""
    present = [c for c in ("demangledName", "shortName") if c in db.columns(KERNEL)]
    name_sql = f"coalesce({', '.join(present)}, -1)" if present else "-1"
    raw_names = np.empty(rows.stop - rows.start, dtype=np.int64)
    extra = [(name_sql, -1, raw_names), *_launch_config(db, KERNEL, cols, rows)]
    db.read_ops(KERNEL, cols, rows, extra, stream_sql=_stream_sql(db, KERNEL))
    cols["kind"][rows] = OpKind.KERNEL
    cols["name_id"][rows], names = _common.intern_ids(raw_names, db.string_table("StringIds", "id"))
    return names


def _copies(db: SqliteExport, cols: dict[str, np.ndarray], rows: slice, notes: list[str]) -> None:
    """Copy rows: bytes, direction, memory kinds and (peer copies) source/destination devices."""
    # Without bytes or copyKind every copy would read as 0 B or of unknown direction.
    db.require(MEMCPY, "bytes", "copyKind")
    raw = np.empty((3, rows.stop - rows.start), dtype=np.int16)
    extra = [
        ('"bytes"', 0, cols["bytes"][rows]),
        (db.code(MEMCPY, "copyKind", 0), 0, raw[0]),
        (db.code(MEMCPY, "srcKind"), -1, raw[1]),
        (db.code(MEMCPY, "dstKind"), -1, raw[2]),
        (db.col(MEMCPY, "srcDeviceId"), -1, cols["src_device"][rows]),
        (db.col(MEMCPY, "dstDeviceId"), -1, cols["dst_device"][rows]),
    ]
    db.read_ops(MEMCPY, cols, rows, extra, stream_sql=_stream_sql(db, MEMCPY))
    copy_names = _enum(db, "ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_", DEFAULT_COPY_KINDS, notes)
    mem_names = _enum(db, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_", DEFAULT_MEM_KINDS, notes)
    copy, src, dst = _common.map_copies(raw[0], raw[1], raw[2], copy_names, mem_names)
    cols["kind"][rows] = OpKind.MEMCPY
    cols["copy_kind"][rows], cols["src_mem"][rows], cols["dst_mem"][rows] = copy, src, dst


def _memsets(db: SqliteExport, cols: dict[str, np.ndarray], rows: slice, notes: list[str]) -> None:
    """Memset rows: bytes and the kind of memory set (``dst_mem``)."""
    db.require(MEMSET, "bytes")
    raw_kind = np.empty(rows.stop - rows.start, dtype=np.int16)
    extra = [('"bytes"', 0, cols["bytes"][rows]), (db.code(MEMSET, "memKind"), -1, raw_kind)]
    db.read_ops(MEMSET, cols, rows, extra, stream_sql=_stream_sql(db, MEMSET))
    mem_names = _enum(db, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_", DEFAULT_MEM_KINDS, [])
    cols["kind"][rows] = OpKind.MEMSET
    cols["dst_mem"][rows] = _common.mem_kinds(raw_kind, mem_names)


def _syncs(db: SqliteExport, cols: dict[str, np.ndarray], rows: slice, notes: list[str]) -> None:
    """Synchronization rows (host waits on the GPU): times, device, stream (-1: none)."""
    db.read_ops(SYNC, cols, rows, stream_sql=_stream_sql(db, SYNC))
    cols["kind"][rows] = OpKind.SYNC


def _join_api(db: SqliteExport, cols: dict[str, np.ndarray]) -> int:
    """CPU API start/end per op from RUNTIME (and DRIVER in old exports) by correlationId."""
    api = db.api_calls((RUNTIME, DRIVER))
    if api is None:
        return 0
    return _common.join_api_times(cols["correlation"], api[0], api[1], api[2], cols["api_start_ns"], cols["api_end_ns"])


def _profiler(db: SqliteExport) -> str:
    """The exporting product and version from the export metadata (``Nsight Systems 2023.3.1``,
    ``nodecast record``), ``Nsight Systems`` when the file does not say."""
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in db.tables and {"name", "value"} <= db.columns(table):
            found = dict(db.rows(f"SELECT name, value FROM \"{table}\" WHERE name IN "
                                 "('EXPORT_PRODUCT_NAME', 'EXPORT_PRODUCT_VERSION')"))
            if found:
                product = found.get("EXPORT_PRODUCT_NAME") or "Nsight Systems"
                version = found.get("EXPORT_PRODUCT_VERSION")
                return f"{product} {version}" if version else str(product)
    return "Nsight Systems"


def _gpus(db: SqliteExport) -> dict[int, str]:
    """GPU name per CUDA device id, from TARGET_INFO_GPU / _CUDA_DEVICE / _CUDA_GPU.

    Ids are checked (``as_int``): a NULL, text or out-of-range id is an
    InputError naming table, column and row. A NULL ``cuDevice`` (older
    exports leave it empty) or a negative one means "no CUDA device", and a
    row without a name names no GPU.
    """
    gpus: dict[int, str] = {}
    by_gpu_id: dict[int, str] = {}
    if "TARGET_INFO_GPU" in db.tables:
        gcols = db.columns("TARGET_INFO_GPU")
        key = "id" if "id" in gcols else "deviceId" if "deviceId" in gcols else None
        if key and "name" in gcols:
            cuda = "cuDevice" if "cuDevice" in gcols else key
            rows = db.rows(f'SELECT "{key}", "{cuda}", name FROM TARGET_INFO_GPU')
            for row, (gpu_id, cu_dev, name) in enumerate(rows, 1):
                gpu_id = as_int(gpu_id, path=db.path, field=f"TARGET_INFO_GPU.{key}", row=row)
                if cu_dev is not None:
                    cu_dev = as_int(cu_dev, path=db.path, field=f"TARGET_INFO_GPU.{cuda}", row=row)
                if name is None:
                    continue
                by_gpu_id[gpu_id] = str(name)
                if cu_dev is not None and cu_dev >= 0:
                    gpus[cu_dev] = str(name)
    # The per-process CUDA id -> nsys GPU id map is the most direct when present.
    if "TARGET_INFO_CUDA_DEVICE" in db.tables and {"gpuId", "cudaId"} <= db.columns("TARGET_INFO_CUDA_DEVICE"):
        rows = db.rows("SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE")
        for row, (gpu_id, cuda_id) in enumerate(rows, 1):
            if gpu_id is None or cuda_id is None:
                continue
            gpu_id = as_int(gpu_id, path=db.path, field="TARGET_INFO_CUDA_DEVICE.gpuId", row=row)
            cuda_id = as_int(cuda_id, path=db.path, field="TARGET_INFO_CUDA_DEVICE.cudaId", row=row)
            if gpu_id in by_gpu_id:
                gpus[cuda_id] = by_gpu_id[gpu_id]
    if "TARGET_INFO_CUDA_GPU" in db.tables and {"deviceId", "name"} <= db.columns("TARGET_INFO_CUDA_GPU"):
        rows = db.rows("SELECT deviceId, name FROM TARGET_INFO_CUDA_GPU")
        for row, (dev, name) in enumerate(rows, 1):
            if dev is not None and name is not None:
                dev = as_int(dev, path=db.path, field="TARGET_INFO_CUDA_GPU.deviceId", row=row)
                gpus.setdefault(dev, str(name))
    return dict(sorted(gpus.items()))


# -- host records ----------------------------------------------------------------------------------

def _api(db: SqliteExport) -> ApiCalls:
    meta = ApiMeta(source=str(db.path), format="nsys-sqlite")
    parts = []
    for table, domain in (("CUPTI_ACTIVITY_KIND_RUNTIME", None), ("CUPTI_ACTIVITY_KIND_DRIVER", Domain.DRIVER)):
        if not db.count(table):
            continue
        db.require(table, "start", "end")
        cls_sql = db.code(table, "eventClass", 0) if domain is None else str(int(domain))
        start, end, tid, corr, name, cls = read_table(db, table, [
            ("start", 0), ('"end"', 0), (db.col(table, "globalTid", 0), 0),
            (db.col(table, "correlationId"), -1), (db.col(table, "nameId"), -1), (cls_sql, 0)])
        check_ends(db, table, start, end)
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
            "correlation": corr, "name_id": inverse.astype(np.int32), "domain": domain, **blank(len(start))}
    _api_sync_records(db, cols, meta)
    _api_streams(db, meta)
    return ApiCalls.from_columns(cols, names, meta)


def _api_sync_records(db: SqliteExport, cols: dict[str, np.ndarray], meta: ApiMeta) -> None:
    table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    if db.count(table):
        corr, stream, event, device = read_table(db, table, [
            (db.col(table, "correlationId"), -1), (u32_none("streamId") if "streamId" in db.columns(table) else "-1", -1),
            (u32_none("eventId") if "eventId" in db.columns(table) else "-1", -1),
            (db.col(table, "deviceId", -1), -1)])
        attach_sync(cols, corr, stream, event, device)
    table = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
    if db.count(table):
        db.require(table, "streamId")  # quoted below: SQLite would read a missing column's name as text
        corr, stream, event = read_table(db, table, [
            (db.col(table, "correlationId"), -1), (u32_none("streamId"), -1), (db.col(table, "eventId"), -1)])
        attach_sync(cols, corr, stream, event, None)


def _api_streams(db: SqliteExport, meta: ApiMeta) -> None:
    if {"streamId", "flag"} <= db.columns("TARGET_INFO_CUDA_STREAM"):
        for stream, flag in db.rows("SELECT streamId, flag FROM TARGET_INFO_CUDA_STREAM"):
            if stream is not None and isinstance(flag, int) and flag in STREAM_FLAGS:
                meta.stream_flags[int(stream)] = STREAM_FLAGS[flag]
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
