"""Write a replay or a forecast where other tools open it: a Chrome trace and a per-op table.

``write_chrome_trace``: Chrome trace-event JSON (the "JSON Array/Object
Format" that chrome://tracing and Perfetto read) with two timelines as two
processes, side by side (``result.timelines()``: measured and replayed for a
``ReplayResult``, measured on A and forecast on B for a ``ForecastResult``):
one track per GPU stream and per host thread, complete events (``ph: "X"``)
with ``ts``/``dur`` in microseconds after the trace's first timestamp.
``write_ops``: the per-op table of ``result.ops_table()`` as CSV or Parquet.
Both write atomically (``fileio.atomic_path``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nodecast.fileio import atomic_path, check_suffix
from nodecast.graph.opgraph import OpKind

if TYPE_CHECKING:
    from nodecast.graph.forecast import ForecastResult
    from nodecast.graph.result import ReplayResult

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
    kind, queue, device = g.ops["kind"], g.ops["queue"], g.ops["device"]
    names = [*g.names, ""]
    gpu = kind <= OpKind.MEMSET
    # One track per (device, stream) and per host thread, numbered in order of appearance.
    track_key = np.where(gpu, device.astype(np.int64) * (1 << 40) + queue, -1 - queue)
    tracks, tid = np.unique(track_key, return_inverse=True)
    events: list[dict] = []
    for pid, (label, _) in enumerate(timelines, start=1):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
        for t, key in enumerate(tracks):
            if key >= 0:
                text = f"GPU {int(key) >> 40} stream {int(key) & ((1 << 40) - 1)}"
            else:
                text = f"host thread {-1 - int(key)}"
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t + 1, "args": {"name": text}})
    for pid, (_, schedule) in enumerate(timelines, start=1):
        ts = schedule.start_s * 1e6
        dur = (schedule.end_s - schedule.start_s) * 1e6
        for v in range(len(g)):
            k = int(kind[v])
            label = names[int(g.ops["name_id"][v])] or OpKind(k).name.lower()
            if k == OpKind.WAIT:
                label = f"wait: {label}"
            events.append({"ph": "X", "pid": pid, "tid": int(tid[v]) + 1, "name": label,
                           "cat": OpKind(k).name.lower(), "ts": round(float(ts[v]), 3),
                           "dur": round(float(dur[v]), 3)})
    return events


def write_chrome_trace(result: Result, path: str | Path) -> Path:
    """Write the result's two timelines as one Chrome trace (JSON)."""
    path = check_trace_path(path)
    doc = {"traceEvents": chrome_events(result), "displayTimeUnit": "ms",
           "otherData": {"source": result.graph.source, "origin_ns": result.graph.origin_ns}}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def write_ops(result: Result, path: str | Path) -> Path:
    """Write the per-op table (start/end in seconds after the origin) as CSV or Parquet."""
    path = check_ops_path(path)
    table = result.ops_table()
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".csv":
            table.to_csv(tmp, index=False)
        else:
            table.to_parquet(tmp, index=False)
    return path
