"""``nodecast.trace_events``: the one writer of Chrome trace-event JSON (Perfetto, chrome://tracing)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from nodecast import trace_events as te


def test_events_hold_their_keys_in_the_order_written_and_times_to_the_nanosecond():
    """Metadata, complete and instant events: keys in a fixed order (the compact file keeps it), ``ts``/``dur`` in
    µs rounded to 3 decimals (ns), ``args`` only when given."""
    assert list(te.process_name(1, "measured", tid=0)) == ["ph", "name", "pid", "tid", "args"]
    assert te.process_name(2, "Transfers") == {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "Transfers"}}
    assert te.thread_name(1, 3, "GPU 0 stream 7") == {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3,
                                                      "args": {"name": "GPU 0 stream 7"}}
    x = te.complete(1, 2, "k", "kernel", 1.23456789, 0.0004999)
    assert list(x) == ["ph", "pid", "tid", "name", "cat", "ts", "dur"]
    assert (x["ts"], x["dur"]) == (1.235, 0.0)
    assert te.complete(2, 0, "a", "transfer", 0.0, 1.0, args={"bytes": 8})["args"] == {"bytes": 8}
    assert te.instant(3, 0, "evict a from gpu0", 2.0004) == {"ph": "i", "s": "t", "pid": 3, "tid": 0,
                                                            "name": "evict a from gpu0", "ts": 2.0}


def test_the_compact_file_keeps_the_event_order_and_has_no_final_newline(tmp_path):
    """The replay's and forecast's form: compact, keys as built, ``displayTimeUnit`` ms."""
    events = [te.complete(1, 1, "k", "kernel", 1.0, 2.0)]
    path = te.write(tmp_path / "t.json", events, {"source": "t.sqlite"})
    assert path.read_bytes() == (b'{"traceEvents":[{"ph":"X","pid":1,"tid":1,"name":"k","cat":"kernel","ts":1.0,'
                                 b'"dur":2.0}],"displayTimeUnit":"ms","otherData":{"source":"t.sqlite"}}')


def test_the_sorted_file_sorts_every_key_and_ends_with_a_newline(tmp_path):
    """The simulator's form: keys sorted at every depth, one final newline."""
    events = [te.process_name(1, "Workers (dmda)")]
    te.write(tmp_path / "t.json", events, {"app": "cholesky"}, sort_keys=True, newline=True)
    assert (tmp_path / "t.json").read_bytes() == (
        b'{"displayTimeUnit":"ms","otherData":{"app":"cholesky"},"traceEvents":[{"args":{"name":"Workers (dmda)"},'
        b'"name":"process_name","ph":"M","pid":1}]}\n')


def test_a_number_that_is_not_finite_is_null(tmp_path):
    """Strict JSON (Perfetto refuses a bare NaN): a time or a value that is not finite is written null."""
    te.write(tmp_path / "t.json", [te.complete(1, 1, "k", "kernel", math.nan, math.inf)], {"gflops": math.nan})
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["traceEvents"][0]["ts"] is None and doc["otherData"]["gflops"] is None


def test_replay_forecast_and_simulation_traces_go_through_the_one_writer(tmp_path, monkeypatch):
    """``workflows.export.write_chrome_trace`` (replay, forecast) and ``runtime.outputs.write_chrome_trace``
    (simulate) both write with ``trace_events.write``: one writer, each file in its own form."""
    from nodecast.runtime.outputs import SimResult, write_chrome_trace
    from nodecast.workflows import export

    calls = []
    real = te.write
    monkeypatch.setattr(te, "write", lambda path, events, other, **form: calls.append(form) or real(path, events, other,
                                                                                                    **form))
    monkeypatch.setattr(export, "chrome_events", lambda result: [te.complete(1, 1, "k", "kernel", 0.0, 1.0)])
    export.write_chrome_trace(SimpleNamespace(graph=SimpleNamespace(source="t.sqlite", origin_ns=0)),
                              tmp_path / "replay.json")
    sim = SimResult(app="empty", platform="p", scheduler="dmda", n_tasks=0, makespan_s=0.0, total_flops=0.0,
                    workers=[], links=[], nodes=[], transfers={}, events=0,
                    trace={"tasks": [], "transfers": [], "evictions": []})
    write_chrome_trace(sim, tmp_path / "sim.json")
    assert calls == [{}, {"sort_keys": True, "newline": True}]
    assert (tmp_path / "sim.json").read_bytes().endswith(b"}\n")
