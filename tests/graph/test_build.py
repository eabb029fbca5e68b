"""Tests for nodecast.graph.build: the edges of real traces, and the refusal of contradictory ones.

Bad inputs are real nsys exports copied to tmp_path with one row altered
through sqlite3, or small Trace/ApiCalls tables built in memory.
"""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.graph.opgraph import EdgeKind, OpKind
from nodecast.graph.build import build_graph
from nodecast.traces.api import ApiCalls, ApiMeta
from nodecast.graph.build import build
from nodecast.traces.kinds import OpKind as TraceKind
from nodecast.traces.trace import Trace, TraceMeta

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"


def _edges(g, kind):
    dst = g.edge_dst()
    m = g.kind == kind
    return g.src[m], dst[m], g.lag_s[m]


def test_vectoradd_streams_edges(shared_traces):
    """The 4-stream vector add: stream order, one launch per GPU op, copies serialised per direction."""
    g = build_graph(shared_traces / VECTORADD)
    c = g.counts()
    assert c["op:kernel"] == 200 and c["op:copy"] == 600 and c["op:api"] == 825
    assert c["edge:launch"] == 800
    assert c["edge:stream_order"] == 800 - 4  # 4 streams, each a chain
    assert c["edge:engine_order"] == 600 - 2  # T4: one engine per direction, HtoD and DtoH chains
    src, dst, _ = _edges(g, EdgeKind.ENGINE_ORDER)
    assert np.all(g.ops["engine"][src] == g.ops["engine"][dst])


def test_stream_sync_waits_for_its_own_stream(shared_traces):
    """Each cudaStreamSynchronize's WAIT depends on the last op of the stream its record names."""
    g = build_graph(shared_traces / VECTORADD)
    names = np.array([*g.names, ""])[g.ops["name_id"]]
    src, dst, _ = _edges(g, EdgeKind.SYNC)
    waits = dst[np.char.startswith(names[dst].astype(str), "cudaStreamSynchronize")]
    assert len(waits) == 4
    for w in waits:
        sources = src[dst == w]
        assert len(set(g.ops["queue"][sources].tolist())) == 1
    # The host continues after the WAIT, never after the bare API op of a blocking call.
    psrc, _, _ = _edges(g, EdgeKind.PROGRAM_ORDER)
    assert set(waits.tolist()) <= set(psrc.tolist())


def test_kineto_nesting_and_flows(shared_traces):
    """Kineto calls nest in their cpu_op (NESTING) and backward ops follow forward ones (FLOW)."""
    g = build_graph(shared_traces / "kineto_training-rank0_v100.json.gz")
    c = g.counts()
    assert c["edge:nesting"] > 1000
    assert c["edge:flow"] == 905
    _, _, lag = _edges(g, EdgeKind.NESTING)
    assert np.all(lag >= 0)


def test_csv_uses_the_recorded_offset_fallback(shared_traces):
    """Without API records every GPU op but the first is placed by RECORDED_OFFSET, with a note."""
    g = build_graph(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv")
    assert g.counts()["edge:recorded_offset"] == 35
    assert any("no API records" in n for n in g.notes)


def _copy(shared_traces, tmp_path, name=VECTORADD):
    path = tmp_path / name
    shutil.copy(shared_traces / name, path)
    path.chmod(0o644)
    return path


def test_kernel_before_its_launch_call_is_refused(shared_traces, tmp_path):
    """A kernel that starts before the call that launched it is a one-line InputError naming the file."""
    path = _copy(shared_traces, tmp_path)
    with sqlite3.connect(path) as con:
        corr, = con.execute("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()
        api_start, = con.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = ?",
                                 (corr,)).fetchone()
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ? WHERE correlationId = ?",
                    (api_start - 1000, corr))
    with pytest.raises(InputError, match="1 GPU ops start before the API call that launched them") as err:
        build_graph(path)
    assert str(path) in err.value.message and "\n" not in err.value.message


def test_correlation_pointing_nowhere_is_a_note(shared_traces, tmp_path):
    """A GPU op whose correlation id matches no call is placed by the fallback, and a note says so."""
    path = _copy(shared_traces, tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 99999999 "
                    "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    g = build_graph(path)
    assert any("1 whose correlation id matches no call" in n for n in g.notes)
    assert g.counts()["edge:recorded_offset"] == 1


def test_sync_without_stream_is_device_wide(shared_traces, tmp_path):
    """A stream sync whose record names no stream waits for the whole device, with a note."""
    path = _copy(shared_traces, tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET streamId = 4294967295 "
                    "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)")
    g = build_graph(path)
    assert any("1 stream synchronisations name no stream" in n for n in g.notes)


def _small(kinds, streams, gpu_start, gpu_end, launches, flags, null=7):
    """A Trace of GPU ops launched one per call by cudaLaunchKernel at ``launches`` (ns)."""
    n = len(kinds)
    corr = np.arange(1, n + 1)
    trace = Trace.from_columns({"kind": kinds, "start_ns": gpu_start, "end_ns": gpu_end, "stream": streams,
                                "correlation": corr}, ["k"], TraceMeta(source="in-memory", format="test"))
    api = ApiCalls.from_columns({"start_ns": launches, "end_ns": np.asarray(launches) + 5, "correlation": corr,
                                 "name_id": np.zeros(n, np.int32)}, ["cudaLaunchKernel"],
                                ApiMeta(format="test", null_streams={0: null}, stream_flags=flags))
    return build(trace, api)


def test_legacy_default_stream_waits_for_blocking_streams_only():
    """A legacy-stream op waits for blocking streams' earlier ops, not for non-blocking ones."""
    k = TraceKind.KERNEL
    g = _small([k, k, k], [13, 14, 7], [100, 100, 400], [300, 350, 500], [10, 20, 30],
               {13: "blocking", 14: "non-blocking", 7: "null"})
    src, dst, _ = _edges(g, EdgeKind.DEFAULT_STREAM)
    queue = g.ops["queue"]
    assert [(int(queue[s]), int(queue[d])) for s, d in zip(src, dst, strict=True)] == [(13, 7)]


def test_cycle_is_refused_with_the_ops_named():
    """Stream order contradicting launch order on the legacy stream makes a cycle: InputError."""
    k = TraceKind.KERNEL
    # Null-stream X launched first but recorded after X2; blocking Y in between: X -> Y -> X2 -> X.
    with pytest.raises(InputError, match="cycle through 3 ops") as err:
        _small([k, k, k], [7, 13, 7], [200, 100, 50], [210, 110, 60], [10, 20, 30],
               {13: "blocking", 7: "null"})
    assert "kernel" in err.value.message


def test_graph_is_acyclic_and_order_is_topological(shared_traces):
    """The stored order lists every op once, each after all its sources."""
    g = build_graph(shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp")
    assert sorted(g.order.tolist()) == list(range(len(g)))
    pos = np.empty(len(g), np.int64)
    pos[g.order] = np.arange(len(g))
    assert np.all(pos[g.src] < pos[g.edge_dst()])
    assert int((g.ops["kind"] == OpKind.WAIT).sum()) > 0
