"""Rows from ``nodecast.record.activities`` -> a SQLite file laid out like ``nsys export --type sqlite``.

Tables written (FORMATS.md C.3; columns in ``activities.COLUMNS``, types and
NOT NULL flags as in a real export):

=====================================  ===============================================
``StringIds``                          kernel and API-call names
``CUPTI_ACTIVITY_KIND_KERNEL``         kernels (names -> StringIds)
``CUPTI_ACTIVITY_KIND_MEMCPY``         copies, peer copies, unified-memory migrations
``CUPTI_ACTIVITY_KIND_MEMSET``         memsets
``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`` host waits on the GPU
``CUPTI_ACTIVITY_KIND_RUNTIME``        runtime (eventClass 0) and driver (1) API calls
``TARGET_INFO_GPU``                    one row per GPU
``ENUM_CUDA_MEMCPY_OPER``,             nsys's numbering, so readers decode by name
``ENUM_CUDA_MEM_KIND``, ...
``PROCESSES``, ``ANALYSIS_DETAILS``,   provenance
``EXPORT_META_DATA``
=====================================  ===============================================

Rows are buffered per table and inserted with ``executemany`` in batches;
the database is written with journaling off (it is a fresh file that only
becomes visible when complete: ``write_trace`` writes through
``nodecast.fileio.atomic_path``). Synchronization rows carry a context but
no device; their device comes from ``CONTEXT`` rows (and from any other row
of the same context) when the file is closed.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nodecast.fileio import atomic_path
from nodecast.record.activities import COLUMNS, STRING_COLUMNS

#: nsys table name of each row ``table``.
TABLES = {
    "KERNEL": "CUPTI_ACTIVITY_KIND_KERNEL",
    "MEMCPY": "CUPTI_ACTIVITY_KIND_MEMCPY",
    "MEMSET": "CUPTI_ACTIVITY_KIND_MEMSET",
    "SYNCHRONIZATION": "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "RUNTIME": "CUPTI_ACTIVITY_KIND_RUNTIME",
    "GPU": "TARGET_INFO_GPU",
}
#: Columns declared NOT NULL in nsys's schema (the rest may be NULL).
NOT_NULL = {
    "KERNEL": {"start", "end", "deviceId", "contextId", "streamId", "demangledName", "shortName",
               "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory",
               "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal", "gridId"},
    "MEMCPY": {"start", "end", "deviceId", "contextId", "streamId", "bytes", "copyKind"},
    "MEMSET": {"start", "end", "deviceId", "contextId", "streamId", "value", "bytes"},
    "SYNCHRONIZATION": {"start", "end", "deviceId", "contextId", "streamId", "syncType", "eventId"},
    "RUNTIME": {"start", "end", "eventClass", "nameId", "returnValue"},
    "GPU": {"vmId", "id"},
}
_TEXT = {("GPU", "name"), ("GPU", "busLocation"), ("GPU", "uuid"), ("GPU", "chipName")}

#: nsys's enum tables: (table, name prefix, [(id, name suffix, label)]).
ENUMS: tuple[tuple[str, str, tuple[tuple[int, str, str], ...]], ...] = (
    ("ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_", (
        (0, "UNKNOWN", "Unknown"), (1, "HTOD", "Host-to-Device"), (2, "DTOH", "Device-to-Host"),
        (3, "HTOA", "Host-to-Array"), (4, "ATOH", "Array-to-Host"), (5, "ATOA", "Array-to-Array"),
        (6, "ATOD", "Array-to-Device"), (7, "DTOA", "Device-to-Array"), (8, "DTOD", "Device-to-Device"),
        (9, "HTOH", "Host-to-Host"), (10, "PTOP", "Peer-to-Peer"), (11, "UVM_HTOD", "Unified Host-to-Device"),
        (12, "UVM_DTOH", "Unified Device-to-Host"), (13, "UVM_DTOD", "Unified Device-to-Device"))),
    ("ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_", (
        (0, "PAGEABLE", "Pageable"), (1, "PINNED", "Pinned"), (2, "DEVICE", "Device"), (3, "ARRAY", "Array"),
        (4, "MANAGED", "Managed"), (5, "DEVICE_STATIC", "Device Static"), (6, "MANAGED_STATIC", "Managed Static"),
        (7, "UNKNOWN", "Unknown"))),
    ("ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_", (
        (0, "UNKNOWN", "Unknown"), (1, "EVENT_SYNCHRONIZE", "Event sync"),
        (2, "STREAM_WAIT_EVENT", "Stream wait sync"), (3, "STREAM_SYNCHRONIZE", "Stream sync"),
        (4, "CONTEXT_SYNCHRONIZE", "Context sync"))),
    ("ENUM_NSYS_EVENT_CLASS", "TRACE_PROCESS_EVENT_", (
        (0, "CUDA_RUNTIME", "CUDA runtime"), (1, "CUDA_DRIVER", "CUDA driver"))),
    ("ENUM_CUDA_UNIF_MEM_MIGRATION", "CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_", (
        (0, "UNKNOWN", "Unknown"), (1, "USER", "User prefetch"), (2, "COHERENCE", "Page fault"),
        (3, "PREFETCH", "Speculative prefecth"), (4, "EVICTION", "Eviction"), (5, "ACCESS_COUNTERS", "Access counters"))),
)

_BATCH = 50_000


def _create_sql(table: str) -> str:
    cols = []
    for c in COLUMNS[table]:
        kind = "TEXT" if (table, c) in _TEXT else "INTEGER"
        null = "   NOT NULL" if c in NOT_NULL[table] else ""
        cols.append(f'    "{c}" {kind}{null}')
    return f'CREATE TABLE "{TABLES[table]}" (\n' + ",\n".join(cols) + "\n)"


class TraceWriter:
    """Writes rows into a new SQLite database at ``path`` (use ``write_trace`` for an atomic file).

    ``add(row)`` takes the dicts of ``activities.Converter``; ``close(meta)``
    writes what is buffered, resolves synchronization devices (from CONTEXT
    rows, else from the kernels, copies and memsets of the same context),
    writes the provenance tables and returns the number of rows per nsys table.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.con = sqlite3.connect(self.path)
        self.con.execute("PRAGMA journal_mode = OFF")
        self.con.execute("PRAGMA synchronous = OFF")
        self.con.execute('CREATE TABLE "StringIds" (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)')
        for table in TABLES:
            self.con.execute(_create_sql(table))
        for name, prefix, rows in ENUMS:
            self.con.execute(f'CREATE TABLE "{name}" (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)')
            self.con.executemany(f'INSERT INTO "{name}" VALUES (?, ?, ?)', [(i, prefix + n, lab) for i, n, lab in rows])
        self._strings: dict[str, int] = {}
        self._buffers: dict[str, list[list[Any]]] = {t: [] for t in TABLES}
        self._string_index = {t: [COLUMNS[t].index(c) for c in cols] for t, cols in STRING_COLUMNS.items()}
        self._inserts = {t: f'INSERT INTO "{TABLES[t]}" VALUES ({", ".join("?" * len(COLUMNS[t]))})' for t in TABLES}
        self._context_device: dict[int, int] = {}
        self._syncs: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {TABLES[t]: 0 for t in TABLES}
        self.unmapped_syncs = 0

    # -- rows -----------------------------------------------------------------------
    def _intern(self, value: str | None) -> int | None:
        if value is None:
            return None
        sid = self._strings.get(value)
        if sid is None:
            sid = self._strings[value] = len(self._strings) + 1
        return sid

    def add(self, row: Mapping[str, Any]) -> None:
        """Buffer one row (``row["table"]`` names its table)."""
        table = row["table"]
        if table == "CONTEXT":
            self._context_device[int(row["contextId"])] = int(row["deviceId"])
            return
        if table == "SYNCHRONIZATION":
            self._syncs.append(dict(row))
            return
        if table not in TABLES:
            msg = f"unknown row table {table!r}"
            raise ValueError(msg)
        self._append(table, row)

    def add_many(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """``add`` every row."""
        for row in rows:
            self.add(row)

    def _append(self, table: str, row: Mapping[str, Any]) -> None:
        # NOTE: runs once per record (a million times for a large trace): keep it to building the tuple.
        values = list(map(row.get, COLUMNS[table]))
        for i in self._string_index.get(table, ()):
            values[i] = self._intern(values[i])
        buf = self._buffers[table]
        buf.append(values)
        if len(buf) >= _BATCH:
            self._flush(table)

    def _flush(self, table: str) -> None:
        buf = self._buffers[table]
        if buf:
            self.con.executemany(self._inserts[table], buf)
            self.counts[TABLES[table]] += len(buf)
            buf.clear()

    # -- closing --------------------------------------------------------------------
    def close(self, meta: Mapping[str, str] | None = None, processes: Mapping[int, str] | None = None) -> dict[str, int]:
        """Write everything, the provenance tables and close; returns rows per table."""
        for table in ("KERNEL", "MEMCPY", "MEMSET"):
            self._flush(table)
            for ctx, dev in self.con.execute(f'SELECT DISTINCT contextId, deviceId FROM "{TABLES[table]}"'):
                self._context_device.setdefault(int(ctx), int(dev))
        for row in self._syncs:
            device = self._context_device.get(int(row["contextId"]))
            if device is None:
                self.unmapped_syncs += 1
                device = 0
            self._append("SYNCHRONIZATION", {**row, "deviceId": device})
        self._syncs.clear()
        for table in TABLES:
            self._flush(table)
        self.con.executemany('INSERT INTO "StringIds" VALUES (?, ?)', [(i, s) for s, i in self._strings.items()])
        activity = [TABLES[t] for t in ("KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION")]
        pids: set[int] = set()
        starts, stops = [], []
        for name in activity:
            pids.update(int(g) for (g,) in self.con.execute(f'SELECT DISTINCT globalPid FROM "{name}"') if g is not None)
            lo, hi = self.con.execute(f'SELECT min(start), max("end") FROM "{name}"').fetchone()
            if lo is not None:
                starts.append(lo)
                stops.append(hi)
        self.con.execute('CREATE TABLE "PROCESSES" (globalPid INTEGER, pid INTEGER, name TEXT)')
        names = dict(processes or {})
        self.con.executemany('INSERT INTO "PROCESSES" VALUES (?, ?, ?)',
                             [(g, (g >> 24) & 0xFFFFFF, names.get((g >> 24) & 0xFFFFFF, "")) for g in sorted(pids)])
        self.con.execute('CREATE TABLE "ANALYSIS_DETAILS" (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, '
                         "startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL)")
        if starts:
            start, stop = int(min(starts)), int(max(stops))
            self.con.execute('INSERT INTO "ANALYSIS_DETAILS" VALUES (0, ?, ?, ?)', (stop - start, start, stop))
        self.con.execute('CREATE TABLE "EXPORT_META_DATA" (name TEXT NOT NULL, value TEXT)')
        meta_rows = dict(meta or {})
        if self.unmapped_syncs:
            meta_rows["NODECAST_UNMAPPED_SYNC_CONTEXTS"] = f"{self.unmapped_syncs} synchronization rows given device 0"
        self.con.executemany('INSERT INTO "EXPORT_META_DATA" VALUES (?, ?)', list(meta_rows.items()))
        self.con.commit()
        self.con.close()
        return dict(self.counts)


def write_trace(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], *,
                meta: Mapping[str, str] | None = None, processes: Mapping[int, str] | None = None) -> dict[str, int]:
    """Write rows to ``path`` atomically (nothing appears there unless the whole file is written)."""
    with atomic_path(path) as tmp:
        writer = TraceWriter(tmp)
        try:
            writer.add_many(rows)
        except BaseException:
            writer.con.close()
            raise
        return writer.close(meta, processes)
