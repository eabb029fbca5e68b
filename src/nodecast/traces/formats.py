"""Every trace format nodecast reads: one ``Reader`` per format (``traces.reader``), one line each.

Detection (``traces.load.detect_format``) asks them in this order. Readers
of different containers (SQLite, Parquet, Arrow, gzip or JSON, text) never
claim the same file; within one, the earlier reader wins: nvprof before nsys
(SQLite), the nvprof GPU-trace CSV before a CSV op table (text), an op table
before nodecast's own Parquet trace, which takes every other Parquet file.
Adding a format is one module with its ``Reader`` and one line here.
"""

from __future__ import annotations

from nodecast.traces import kineto, nsys, nvprof, nvprof_csv, op_table, parquet
from nodecast.traces.reader import Reader

READERS: tuple[Reader, ...] = (
    nvprof.READER,
    nsys.READER,
    kineto.READER,
    nvprof_csv.READER,
    op_table.READER,
    parquet.PARQUET_READER,
    parquet.ARROW_READER,
)
