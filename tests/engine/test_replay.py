"""Tests for nodecast.engine.replay: the compiled single pass against the Python reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecast.graph.opgraph import Anchor, EdgeKind
from nodecast.engine.replay import replay, replay_reference
from nodecast.graph.order import topological_order


def test_chain_with_lags_and_start_anchor(graph_of):
    """start = max over in-edges of (start or end of the source) + lag, end = start + duration."""
    g = graph_of(3, [(0, 1, EdgeKind.STREAM_ORDER, Anchor.END, 0.5), (0, 2, EdgeKind.NESTING, Anchor.START, 0.25),
                     (1, 2, EdgeKind.LAUNCH, Anchor.END, -1.0)])
    s = replay(g, np.array([2.0, 1.0, 1.0]), start_s=10.0)
    assert s.start_s.tolist() == [10.0, 12.5, 12.5]
    assert s.end_s.tolist() == [12.0, 13.5, 13.5]


def test_release_time_delays_a_source(graph_of):
    """An op with no in-edge starts at the origin plus its release time."""
    g = graph_of(2, [], release=np.array([0.0, 3.0]))
    assert replay(g, np.ones(2)).start_s.tolist() == [0.0, 3.0]


def test_cycle_is_detected():
    """Kahn's algorithm reports the ops left on a cycle."""
    indptr = np.array([0, 1, 2, 2], np.int64)  # 1 -> 0 and 0 -> 1; op 2 free
    order, stuck = topological_order(3, indptr, np.array([1, 0], np.int32))
    assert order.tolist() == [2]
    assert stuck.tolist() == [0, 1]


def test_bad_durations_are_refused(graph_of):
    """Durations must be one finite non-negative value per op."""
    g = graph_of(2, [(0, 1, EdgeKind.STREAM_ORDER, Anchor.END, 0.0)])
    with pytest.raises(ValueError, match="shape"):
        replay(g, np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        replay(g, np.array([1.0, -1.0]))


@st.composite
def dags(draw):
    n = draw(st.integers(1, 40))
    edges = []
    for v in range(1, n):
        for u in draw(st.lists(st.integers(0, v - 1), max_size=4, unique=True)):
            edges.append((u, v, int(draw(st.sampled_from(list(EdgeKind)))), draw(st.integers(0, 1)),
                          draw(st.floats(-1.0, 5.0, allow_nan=False))))
    perm = draw(st.permutations(range(n)))  # op indices need not be topological
    edges = [(perm[u], perm[v], k, a, lag) for u, v, k, a, lag in edges]
    dur = draw(st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=n, max_size=n))
    release = draw(st.lists(st.floats(0.0, 3.0, allow_nan=False), min_size=n, max_size=n))
    return n, edges, np.array(dur), np.array(release)


# graph_of returns a pure function: nothing in it needs resetting between examples.
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dags())
def test_compiled_replay_matches_reference(graph_of, case):
    """On random DAGs the numba pass and the plain-Python reference give the same schedule."""
    n, edges, dur, release = case
    g = graph_of(n, edges, release=release)
    fast = replay(g, dur, start_s=1.5)
    ref = replay_reference(g, dur, start_s=1.5)
    np.testing.assert_allclose(fast.start_s, ref.start_s, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.end_s, ref.end_s, rtol=0, atol=1e-12)
    # Every edge holds in the result (opgraph.py, equation 1).
    dst = g.edge_dst()
    t = np.where(g.anchor == Anchor.START, fast.start_s[g.src], fast.end_s[g.src]) + g.lag_s
    assert np.all(fast.start_s[dst] >= t - 1e-12)
