"""Chrome trace-event JSON, the file Perfetto (ui.perfetto.dev) and chrome://tracing open: the one writer.

Every timeline nodecast lets a person open elsewhere is written here: a
replay's or a forecast's measured and replayed timelines
(``workflows.export``) and a simulated schedule (``runtime.outputs``). It
lives at the ground so that both reach it without importing a layer above
them. The format is the "JSON Object Format" of Chrome's trace-event
specification: ``{"traceEvents": [...], "displayTimeUnit": "ms",
"otherData": {...}}``; each event names its process (``pid``) and thread
(``tid``), times are microseconds (``ts``, ``dur``) rounded to 3 decimals,
the nanosecond a profiler records.

The event builders keep their keys in one order, which the compact file
keeps. ``write`` writes strict JSON (a number that is not finite is null:
Perfetto refuses a bare NaN), atomically (``fileio.atomic_path``), in one of
two forms: compact in the order built (replay, forecast), or with every key
sorted and a final newline (``sort_keys``, ``newline``: the simulator's
files have always been so, and stay byte for byte what they were).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodecast.fileio import atomic_path
from nodecast.strict_json import dumps

#: Unit the viewer shows times in (the events' own unit is always µs).
DISPLAY_UNIT = "ms"


def process_name(pid: int, name: str, *, tid: int | None = None) -> dict[str, Any]:
    """The metadata event naming process ``pid`` (a timeline: "measured on A", "Transfers")."""
    event: dict[str, Any] = {"ph": "M", "name": "process_name", "pid": pid}
    if tid is not None:
        event["tid"] = tid
    event["args"] = {"name": name}
    return event


def thread_name(pid: int, tid: int, name: str) -> dict[str, Any]:
    """The metadata event naming thread ``tid`` of process ``pid`` (a track: a GPU stream, a worker)."""
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


def complete(pid: int, tid: int, name: str, cat: str, ts_us: float, dur_us: float,
             args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A complete event (``ph: "X"``): ``name`` of category ``cat`` from ``ts_us`` for ``dur_us`` (µs, rounded to
    the ns); ``args`` shown beside it when given."""
    event: dict[str, Any] = {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat,
                             "ts": round(float(ts_us), 3), "dur": round(float(dur_us), 3)}
    if args is not None:
        event["args"] = args
    return event


def instant(pid: int, tid: int, name: str, ts_us: float) -> dict[str, Any]:
    """An instant event (``ph: "i"``) of thread scope at ``ts_us`` (µs, rounded to the ns): an eviction."""
    return {"ph": "i", "s": "t", "pid": pid, "tid": tid, "name": name, "ts": round(float(ts_us), 3)}


def document(events: Sequence[Mapping[str, Any]], other: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object of a trace: its events, the unit times are shown in, and ``other`` (what it is of)."""
    return {"traceEvents": events, "displayTimeUnit": DISPLAY_UNIT, "otherData": other}


def write(path: str | Path, events: Sequence[Mapping[str, Any]], other: Mapping[str, Any], *,
          sort_keys: bool = False, newline: bool = False) -> Path:
    """Write ``document(events, other)`` to ``path`` as compact strict JSON (atomically); ``sort_keys``: every key
    sorted, ``newline``: a final newline. Returns the path."""
    text = dumps(document(events, other), separators=(",", ":"), sort_keys=sort_keys)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n" if newline else text, encoding="utf-8")
    return Path(path)
