"""What the host-record readers share (``ApiCalls`` from nsys, nvprof and Kineto files).

Sync-type codes are not trusted for the meaning of a call (older nsys
exports label cudaThreadSynchronize "event sync"); the function name decides
(``api.call_kind``), the records only supply the stream, event and device.
Timestamps stay the profiler's integer nanoseconds. Nothing is written.
"""

from __future__ import annotations

import numpy as np

from nodecast.errors import InputError
from nodecast.traces._sqlite import SqliteExport

# CUPTI writes "none" (no stream, no event) as uint32 0xFFFFFFFF.
NONE_U32 = 0xFFFFFFFF
#: CUpti_ActivityStreamFlag: 1 default (blocking), 2 non-blocking, 3 NULL stream.
STREAM_FLAGS = {1: "blocking", 2: "non-blocking", 3: "null"}


def u32_none(col: str) -> str:
    """SQL reading CUPTI's 0xFFFFFFFF "none" (and NULL) as -1."""
    return f'CASE WHEN "{col}" IS NULL OR "{col}" = {NONE_U32} OR "{col}" < 0 THEN -1 ELSE "{col}" END'


def read_table(db: SqliteExport, table: str, exprs: list[tuple[str, int]], where: str = "") -> list[np.ndarray]:
    """Columns of ``SELECT exprs FROM table`` as int64 arrays (empty when the table is absent)."""
    n = db.count(table, where)
    outs = [np.empty(n, dtype=np.int64) for _ in exprs]
    if n:
        db.read_into(table, exprs, outs, where)
    return outs


def check_ends(db: SqliteExport, table: str, start: np.ndarray, end: np.ndarray) -> None:
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


def attach_sync(cols: dict[str, np.ndarray], corr: np.ndarray, stream: np.ndarray, event: np.ndarray,
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


def blank(n: int) -> dict[str, np.ndarray]:
    """Stream, event and device columns of ``n`` calls, all -1 (none recorded)."""
    return {"stream": np.full(n, -1, np.int64), "event": np.full(n, -1, np.int64), "device": np.full(n, -1, np.int16)}
