"""Write a replay or a forecast where other tools open it: a Chrome trace and a per-op table.

``write_chrome_trace``: Chrome trace-event JSON (``nodecast.trace_events``,
the one writer of the format that chrome://tracing and Perfetto read) with
two timelines as two processes, side by side (``result.timelines()``:
measured and replayed for a ``ReplayResult``, measured on A and forecast on
B for a ``ForecastResult``): one track per GPU stream and per host thread,
complete events (``ph: "X"``) with ``ts``/``dur`` in microseconds after the
trace's first timestamp.
``write_ops``: the per-op table of ``result.ops_table()`` as CSV or Parquet, written a block of rows
at a time.
Both write atomically (``fileio.atomic_path``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from nodecast import trace_events
from nodecast.fileio import atomic_path, check_suffix
from nodecast.graph.opgraph import OpKind, kind_label
from nodecast.graph.tracks import tracks

if TYPE_CHECKING:
    import pandas as pd

    from nodecast.workflows.forecast import ForecastResult
    from nodecast.workflows.replay import ReplayResult

    Result = ReplayResult | ForecastResult

OPS_SUFFIXES = (".csv", ".parquet")


def check_ops_path(path: str | Path) -> Path:
    """The ``-o`` path, if it ends in a table format written here."""
    return check_suffix(path, OPS_SUFFIXES, "a per-op table")


def check_trace_path(path: str | Path) -> Path:
    """The ``--trace`` path, if it ends in .json."""
    return check_suffix(path, (".json",), "a Chrome trace")


def chrome_events(result: Result) -> list[dict]:
    """Trace events of the result's timelines (pid 1, 2... in the order of ``result.timelines()``)."""
    g = result.graph
    timelines = result.timelines()
    kind = g.ops["kind"]
    names = [*g.names, ""]
    # One track per (device, stream) and per host thread (nodecast.graph.tracks).
    tid, labels = tracks(g)
    events: list[dict] = []
    for pid, (label, _) in enumerate(timelines, start=1):
        events.append(trace_events.process_name(pid, label, tid=0))
        for t, text in enumerate(labels):
            events.append(trace_events.thread_name(pid, t + 1, text))
    for pid, (_, schedule) in enumerate(timelines, start=1):
        ts = schedule.start_s * 1e6
        dur = (schedule.end_s - schedule.start_s) * 1e6
        for v in range(len(g)):
            k = int(kind[v])
            label = names[int(g.ops["name_id"][v])] or kind_label(k)
            if k == OpKind.WAIT:
                label = f"wait: {label}"
            events.append(trace_events.complete(pid, int(tid[v]) + 1, label, kind_label(k), ts[v], dur[v]))
    return events


def write_chrome_trace(result: Result, path: str | Path) -> Path:
    """Write the result's two timelines as one Chrome trace (strict JSON: a time that is not finite is null)."""
    path = check_trace_path(path)
    return trace_events.write(path, chrome_events(result),
                              {"source": result.graph.source, "origin_ns": result.graph.origin_ns})


#: Ops of the per-op table built and written at a time. The table (16 columns, three of them text) is only
#: ever written, so it is made a block of rows at a time and never whole (a 10 M-op table was 2.5 GB in
#: memory beside the result it is made from); a Parquet file gets one row group per block.
OPS_BLOCK_ROWS = 1 << 18


def write_ops(result: Result, path: str | Path) -> Path:
    """Write the per-op table (start/end in seconds after the origin) as CSV or Parquet, a block of rows at a time."""
    path = check_ops_path(path)
    n = len(result.graph)
    blocks = (result.ops_table(slice(lo, lo + OPS_BLOCK_ROWS)) for lo in range(0, max(n, 1), OPS_BLOCK_ROWS))
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".csv":
            for i, block in enumerate(blocks):
                block.to_csv(tmp, index=False, header=i == 0, mode="w" if i == 0 else "a")
        else:
            _write_parquet(blocks, tmp)
    return path


def _write_parquet(blocks: Iterator[pd.DataFrame], path: Path) -> None:
    """The frames ``blocks`` (one schema) as one Parquet file, each a row group, as ``DataFrame.to_parquet`` writes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        for block in blocks:
            table = pa.Table.from_pandas(block, preserve_index=False, nthreads=1)  # no threads: a block is small
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
