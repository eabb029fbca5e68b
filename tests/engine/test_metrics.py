"""Tests for nodecast.engine.metrics: GPU-busy union, end-to-end and the critical path."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.engine import metrics
from nodecast.engine.replay import replay
from nodecast.graph.opgraph import Anchor, EdgeKind, OpKind
from nodecast.workflows.replay import replay_trace


def test_busy_is_the_union_of_intervals():
    """Overlapping intervals count once, gaps not at all: [0,2] u [1,3] u [5,6] u [5.5,5.7] = 4 s."""
    start = np.array([5.0, 0.0, 1.0, 5.5])
    end = np.array([6.0, 2.0, 3.0, 5.7])
    assert metrics.busy_s(start, end) == pytest.approx(4.0)
    assert metrics.busy_s(np.zeros(0), np.zeros(0)) == 0.0


def test_critical_path_follows_the_binding_edges(graph_of):
    """Host call (API) -> launch lag -> kernel; the path's categories sum to the end-to-end time."""
    kinds = np.array([OpKind.API, OpKind.KERNEL, OpKind.KERNEL])
    g = graph_of(3, [(0, 1, EdgeKind.LAUNCH, Anchor.END, 0.5), (1, 2, EdgeKind.STREAM_ORDER, Anchor.END, 0.0)],
                 kinds=kinds, release=np.array([1.0, 0.0, 0.0]))
    s = replay(g, np.array([2.0, 3.0, 4.0]))
    cp = metrics.critical_path(g, s)
    assert cp.ops.tolist() == [2, 1, 0]
    assert cp.breakdown_s == {"kernels": 7.0, "host: API calls": 2.0, "launch latency": 0.5,
                              "host: before the first call": 1.0}
    assert cp.length_s == pytest.approx(metrics.end_to_end_s(g, s)) == pytest.approx(10.5)


def test_path_leaving_from_a_start_does_not_count_that_op(graph_of):
    """A NESTING edge (from the enclosing span's start) adds its lag, not the span's duration."""
    kinds = np.array([OpKind.API, OpKind.KERNEL])
    g = graph_of(2, [(0, 1, EdgeKind.NESTING, Anchor.START, 0.25)], kinds=kinds)
    s = replay(g, np.array([10.0, 1.0]))
    assert metrics.critical_path(g, s).breakdown_s == {"kernels": 1.0, "host: gaps between calls": 0.25}


def test_gpu_dependency_lags_count_on_the_path(graph_of):
    """A calibrated GPU dependency latency (lag on a STREAM_ORDER edge) is part of the path's length."""
    kinds = np.array([OpKind.KERNEL, OpKind.KERNEL])
    g = graph_of(2, [(0, 1, EdgeKind.STREAM_ORDER, Anchor.END, 0.125)], kinds=kinds)
    s = replay(g, np.array([1.0, 2.0]))
    cp = metrics.critical_path(g, s)
    assert cp.breakdown_s == {"kernels": 3.0, "GPU dependency latency": 0.125}
    assert cp.length_s == pytest.approx(metrics.end_to_end_s(g, s))
    assert cp.op_time_s.tolist() == [2.0, 1.0]


def test_breakdown_sums_to_replayed_end_to_end(shared_traces):
    """On a real trace the critical-path categories add up to the replayed end-to-end time."""
    r = replay_trace(shared_traces / "nsys_sptrsv-levelset-ca_t4.sqlite")
    assert sum(r.critical_path_s.values()) == pytest.approx(r.replayed_end_to_end_s, rel=1e-9)


def test_slack_is_zero_on_a_replay_and_finds_unexplained_waits(shared_traces):
    """A replayed schedule has no slack; on the measured MXNet run some GPU ops wait for what no edge explains."""
    r = replay_trace(shared_traces / "nvprof_mxnet-cnn-inference_titan-v.nvvp")
    assert np.abs(metrics.slack_s(r.graph, r.replayed)).max() < 1e-12
    late = r.graph.gpu_mask() & (metrics.slack_s(r.graph, r.measured) > 1e-4)
    assert late.sum() >= 10


def test_nccl_kernels_are_a_category_of_their_own(graph_of):
    """An NCCL kernel counts as collectives, apart from compute kernels, on the critical path and in op_category;
    a graph without one keeps the codes and labels it had (the new label comes last)."""
    kinds = np.array([OpKind.KERNEL, OpKind.KERNEL, OpKind.KERNEL])
    g = graph_of(3, [(0, 1, EdgeKind.STREAM_ORDER, Anchor.END, 0.0), (1, 2, EdgeKind.STREAM_ORDER, Anchor.END, 0.0)],
                 kinds=kinds)
    g.names[:] = ["void gemm_kernel<float>(float*)", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"]
    g.ops["name_id"][:] = [0, 1, -1]
    cp = metrics.critical_path(g, replay(g, np.array([1.0, 2.0, 4.0])))
    assert cp.breakdown_s == {"kernels": 5.0, metrics.COLLECTIVES: 2.0}
    code, labels = metrics.op_category(g)
    assert [labels[c] for c in code] == ["kernels", metrics.COLLECTIVES, "kernels"]
    g.names[1] = "vectorAdd(float*)"
    code, labels = metrics.op_category(g)
    assert code.tolist() == [0, 0, 0] and labels[-1] == metrics.COLLECTIVES


def test_the_a100_training_run_shows_its_collectives_on_a_and_b(shared_traces):
    """The 8-GPU training trace forecast onto an H100 node: the NCCL kernels' share before and after."""
    from nodecast.workflows.forecast import forecast_trace

    r = forecast_trace(shared_traces / "kineto_training-rank0_a100-80gb.json.gz", "h100-sxm5-server")
    cats = r.categories().set_index("category")
    assert cats.loc[metrics.COLLECTIVES, "ops"] == 80
    assert cats.loc[metrics.COLLECTIVES, "source_s"] > 0.1
    assert "nccl-scaled" in cats.loc[metrics.COLLECTIVES, "models"]
    paths = r.critical_paths().set_index("category")
    assert paths.loc[metrics.COLLECTIVES, "on_a_s"] > 0.02
