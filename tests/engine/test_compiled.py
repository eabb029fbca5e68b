"""Tests for nodecast.engine.compiled: the compiled event loop gives the Python engine and network's schedule,
bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecast.engine import compiled as event_compiled
from nodecast.engine.event_replay import copy_links, replay_shared
from nodecast.graph.opgraph import EdgeKind, Engine
from nodecast.graph.order import csr_positions

from .test_event_replay import switch_platform, with_copies

GB = 1e9


@st.composite
def shared_cases(draw):
    """Random DAGs (negative lags and start anchors too) of kernels and copies on three GPUs behind one switch, in
    both directions, with per-copy durations (each copy its own rate bound), copy engines and kernel slots."""
    n = draw(st.integers(1, 60))
    edges = []
    for v in range(1, n):
        for u in draw(st.lists(st.integers(0, v - 1), max_size=3, unique=True)):
            edges.append((u, v, int(draw(st.sampled_from(list(EdgeKind)))), draw(st.integers(0, 1)),
                          draw(st.floats(-1e-3, 5e-3, allow_nan=False))))
    copies = {}
    for v in range(n):
        if draw(st.booleans()):
            copies[v] = (draw(st.integers(0, 2)), draw(st.sampled_from([Engine.HTOD, Engine.DTOH])),
                         draw(st.integers(1, 1 << 30)))
    dur = np.array(draw(st.lists(st.floats(0.0, 1e-2, allow_nan=False), min_size=n, max_size=n)))
    release = np.array(draw(st.lists(st.floats(0.0, 1e-2, allow_nan=False), min_size=n, max_size=n)))
    engines = draw(st.sampled_from([None, 1, 2]))
    slots = draw(st.sampled_from([None, 1, 2]))
    latency = draw(st.sampled_from([0.0, 1e-6]))
    return n, edges, copies, dur, release, engines, slots, latency


def both(g, dur, links, monkeypatch=None, **kw):
    """(compiled, python) replays; with ``monkeypatch``, also checks that the compiled loop ran to the end itself
    (its class table and event heap, sized in advance, held everything: no fallback to the Python loop)."""
    calls: list[int | None] = []
    if monkeypatch is not None:
        real = event_compiled.run

        def counted(*args):
            calls.append(real(*args))
            return calls[-1]

        monkeypatch.setattr(event_compiled, "run", counted)
    compiled = replay_shared(g, dur, links, path="event", **kw)
    if monkeypatch is not None:
        assert len(calls) == 1 and calls[0] is not None
    python = replay_shared(g, dur, links, path="event", engine="python", **kw)
    return compiled, python


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shared_cases())
def test_compiled_loop_equals_the_python_engine(graph_of, case):
    """On random graphs whose copies share a narrow uplink (rates from their durations, latencies, copy engines
    and kernel slots that make ops wait), the compiled loop (without falling back) and the simulator's Python engine
    and fluid network give the same starts and ends, bit for bit, and process the same number of events."""
    n, edges, copies, dur, release, engines, slots, latency = case
    g = with_copies(graph_of(n, edges, release=release), copies,
                    engines=None if engines is None else dict.fromkeys(range(3), engines))
    g.ops["queue"][:] = np.arange(n) % 3
    links = copy_links(g, switch_platform(uplink_bps=2 * GB, slot_bps=4 * GB, gpus=3, latency_s=latency),
                       durations_s=np.where(np.isin(np.arange(n), list(copies)), dur + 1e-3, dur))
    with pytest.MonkeyPatch.context() as mp:
        compiled, python = both(g, dur, links, mp, max_concurrent_kernels=slots)
    assert compiled.schedule.start_s.tolist() == python.schedule.start_s.tolist()
    assert compiled.schedule.end_s.tolist() == python.schedule.end_s.tolist()
    assert compiled.events == python.events


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shared_cases())
def test_out_edges_are_the_in_edges_turned_around(graph_of, case):
    """out_edges lists every in-edge once under its source, in the order replay.csr_positions sorts them, with its
    destination, anchor and index, and flags exactly the ops with an out-edge counted from their start."""
    n, edges, *_ = case
    g = graph_of(n, edges)
    flags = np.zeros(n, np.int8)
    out_ptr, out_code, out_eid = event_compiled.out_edges(g.indptr, g.src, g.anchor, flags)
    ptr, pos = csr_positions(g.src, n)
    assert out_ptr.tolist() == ptr.tolist()
    eid = np.empty(g.n_edges, np.int64)
    eid[pos] = np.arange(g.n_edges)
    assert out_eid.tolist() == eid.tolist()
    assert (out_code >> 1).tolist() == g.edge_dst()[eid].tolist()
    assert (out_code & 1).tolist() == g.anchor[eid].tolist()
    from_start = np.zeros(n, bool)
    from_start[g.src[g.anchor == 0]] = True
    assert ((flags & event_compiled.START_OUT) != 0).tolist() == from_start.tolist()


def test_many_copies_of_one_class_and_ties(graph_of):
    """Forty 1 GB copies of one size and rate on two GPUs released together (one sharing class per route, equal
    completion times: the order of ties decides the rest) end where the Python engine ends them."""
    g = with_copies(graph_of(40, []), {v: (v % 2, Engine.HTOD, GB) for v in range(40)})
    links = copy_links(g, switch_platform(uplink_bps=10 * GB, slot_bps=10 * GB))
    compiled, python = both(g, np.zeros(40), links)
    assert compiled.schedule.end_s.tolist() == python.schedule.end_s.tolist()
    assert compiled.events == python.events > 40


def test_a_full_event_heap_falls_back_to_the_python_loop(graph_of, monkeypatch):
    """When the compiled loop's event heap would overflow, it gives up and the Python loop replays: same result."""
    g = with_copies(graph_of(6, []), {v: (v % 2, Engine.HTOD, GB) for v in range(6)})
    links = copy_links(g, switch_platform())
    expected = replay_shared(g, np.zeros(6), links, path="event", engine="python")
    real = event_compiled.run
    calls: list[int | None] = []

    def counted(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(event_compiled, "run", counted)
    monkeypatch.setattr(event_compiled, "HEAP_PER_EVENT_OP", 0)
    monkeypatch.setattr(event_compiled, "HEAP_MIN", 2)
    r = replay_shared(g, np.zeros(6), links, path="event")
    assert calls == [None]
    assert r.schedule.end_s.tolist() == expected.schedule.end_s.tolist() and r.events == expected.events
