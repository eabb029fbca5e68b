"""Tests for nodecast.engine.event_replay: replay with copies sharing links, and when the single pass is exact."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.engine.event_replay import CopyLinks, copy_links, replay_shared
from nodecast.graph.opgraph import Anchor, EdgeKind, Engine, OpKind
from nodecast.engine.replay import replay
from nodecast.engine.platform import Platform

GB = 1e9


def switch_platform(uplink_bps: float = 10 * GB, slot_bps: float = 20 * GB, gpus: int = 2,
                    latency_s: float = 0.0, peer: bool = False) -> Platform:
    """RAM and ``gpus`` GPUs behind one PCIe switch: a shared up- and down-link to RAM, a slot link per GPU (with
    ``peer``, GPUs copy to each other through the switch: out of one slot, into the other)."""
    names = ["RAM"] + [f"CUDA{i}" for i in range(gpus)]
    n = len(names)
    links = ["up", "down"]
    bw = [uplink_bps, uplink_bps]
    for g in range(gpus):
        links += [f"slot{g} in", f"slot{g} out"]
        bw += [slot_bps, slot_bps]
    route = [[None] * n for _ in range(n)]
    for i in range(n):
        route[i][i] = ()
    for g in range(gpus):
        route[0][g + 1] = (0, 2 + 2 * g)  # RAM -> switch -> GPU
        route[g + 1][0] = (3 + 2 * g, 1)
    if peer:
        for g in range(gpus):
            for h in range(gpus):
                if g != h:
                    route[g + 1][h + 1] = (3 + 2 * g, 2 + 2 * h)
    lat = [[0.0 if i == j else latency_s * len(route[i][j] or ()) for j in range(n)] for i in range(n)]
    return Platform(name="switch", source="test", node_names=names, node_kinds=["ram"] + ["cuda"] * gpus,
                    capacity_bytes=[math.inf] * n, model_devid=list(range(n)), gpu_models=["GPU"] * gpus, n_cpus=4,
                    link_names=links, link_bandwidth_bps=bw, link_latency_s=[latency_s] * len(links),
                    route_links=route, route_latency_s=lat, peer=[[peer and 0 < i != j > 0 for j in range(n)] for i in range(n)],
                    predict_bandwidth_bps=[[GB] * n for _ in range(n)], predict_latency_s=[[0.0] * n for _ in range(n)])


def with_copies(g, copies: dict[int, tuple[int, int, float]], engines: dict[int, int] | None = None):
    """Mark ops of ``g`` as copies: op -> (device, Engine, bytes); other ops stay kernels on device 0."""
    for v, (device, engine, nbytes) in copies.items():
        g.ops["kind"][v] = OpKind.COPY
        g.ops["device"][v] = device
        g.ops["engine"][v] = engine
        g.ops["bytes"][v] = nbytes
    if engines is not None:
        g.params["copy_engines"] = engines
    return g


def test_two_gpus_behind_one_switch_share_its_uplink(graph_of):
    """Two 1 GB host-to-device copies to two GPUs behind one 10 GB/s uplink, started together, each get 5 GB/s
    (max-min) and end at 0.2 s, where the single pass (each alone at 10 GB/s) says 0.1 s; the auto path sees the
    uplink oversubscribed and runs the event engine; the kernel after the first copy starts at its end."""
    g = with_copies(graph_of(3, [(0, 2, EdgeKind.STREAM_ORDER, Anchor.END, 0.0)]),
                    {0: (0, Engine.HTOD, GB), 1: (1, Engine.HTOD, GB)})
    links = copy_links(g, switch_platform())
    assert links.route.tolist()[:2] == [0, 1] and links.rate_bps[:2].tolist() == [10 * GB, 10 * GB]
    dur = np.array([0.0, 0.0, 0.05])
    single = replay(g, links.solo_durations(g, dur))
    assert single.end_s.tolist() == pytest.approx([0.1, 0.1, 0.15], rel=1e-15)
    r = replay_shared(g, dur, links)
    assert r.path == "event" and r.oversubscribed == {"up": 2.0} and "up carries up to 2.00x" in r.reason
    assert r.schedule.end_s.tolist() == pytest.approx([0.2, 0.2, 0.25], rel=1e-12)
    assert r.copies == 2 and r.events > 0


def test_opposite_directions_do_not_share(graph_of):
    """A host-to-device and a device-to-host copy of the two GPUs use the uplink's two directions: nothing is
    shared, the auto path keeps the single pass and says why."""
    g = with_copies(graph_of(2, []), {0: (0, Engine.HTOD, GB), 1: (1, Engine.DTOH, GB)})
    r = replay_shared(g, np.zeros(2), copy_links(g, switch_platform()))
    assert r.path == "single-pass" and "no link carried more than its capacity" in r.reason
    assert r.schedule.end_s.tolist() == [0.1, 0.1]


def test_copies_slower_than_the_link_do_not_slow_each_other(graph_of):
    """Two copies capped at 4 GB/s each by their transfer model fit in a 10 GB/s uplink together: each keeps its
    own rate, the single pass is exact, and the forced event path gives the same schedule bit for bit."""
    g = with_copies(graph_of(2, []), {0: (0, Engine.HTOD, GB), 1: (1, Engine.HTOD, GB)})
    links = copy_links(g, switch_platform(), durations_s=np.array([0.25, 0.25]))
    assert links.rate_bps.tolist() == [4 * GB, 4 * GB]
    auto = replay_shared(g, np.zeros(2), links)
    forced = replay_shared(g, np.zeros(2), links, path="event")
    assert auto.path == "single-pass" and forced.path == "event"
    assert auto.schedule.end_s.tolist() == forced.schedule.end_s.tolist() == [0.25, 0.25]


def test_latency_then_bandwidth(graph_of):
    """A copy waits its route's latency, then drains at its rate: 1 GB over two 1 µs links at 10 GB/s ends at
    2 µs + 0.1 s; two such copies started together share only the bandwidth phase (0.2 s + 2 µs)."""
    g = with_copies(graph_of(2, []), {0: (0, Engine.HTOD, GB), 1: (1, Engine.HTOD, GB)})
    links = copy_links(g, switch_platform(latency_s=1e-6))
    assert links.latency_s.tolist() == [2e-6, 2e-6]
    r = replay_shared(g, np.zeros(2), links)
    assert r.schedule.end_s.tolist() == pytest.approx([0.2 + 2e-6] * 2, rel=1e-12)
    g1 = with_copies(graph_of(1, []), {0: (0, Engine.HTOD, GB)})
    assert replay_shared(g1, np.zeros(1), copy_links(g1, switch_platform(latency_s=1e-6)),
                         path="event").schedule.end_s.tolist() == [2e-6 + 0.1]


def test_a_copy_engine_serves_its_copies_one_at_a_time(graph_of):
    """With one copy engine per direction and no ENGINE_ORDER chain in the graph, three host-to-device copies
    of one GPU launched together run one after the other on the event path (first come, first served)."""
    g = with_copies(graph_of(3, []), {v: (0, Engine.HTOD, GB) for v in range(3)}, engines={0: 1})
    r = replay_shared(g, np.zeros(3), copy_links(g, switch_platform(slot_bps=10 * GB)))
    assert r.path == "event" and r.waits == {"copy engine dev0 htod": 3.0}
    assert sorted(r.schedule.end_s.tolist()) == pytest.approx([0.1, 0.2, 0.3], rel=1e-12)


def test_an_engine_chain_needs_no_event_path(graph_of):
    """Copies the graph already chains (ENGINE_ORDER, one engine per direction) never share their links: the auto
    path keeps the single pass without checking the schedule."""
    chain = [(0, 1, EdgeKind.ENGINE_ORDER, Anchor.END, 0.0), (1, 2, EdgeKind.ENGINE_ORDER, Anchor.END, 0.0)]
    g = with_copies(graph_of(3, chain), {v: (0, Engine.HTOD, GB) for v in range(3)}, engines={0: 1})
    r = replay_shared(g, np.zeros(3), copy_links(g, switch_platform()))
    assert r.path == "single-pass" and "one copy engine only" in r.reason
    assert r.schedule.end_s.tolist() == pytest.approx([0.1, 0.2, 0.3], rel=1e-12)


def test_kernel_slots_limit_concurrent_kernels(graph_of):
    """With max_concurrent_kernels=1, two independent 1 s kernels of one GPU run one after the other."""
    g = graph_of(2, [])
    links = copy_links(g, switch_platform())
    assert replay_shared(g, np.ones(2), links).schedule.end_s.tolist() == [1.0, 1.0]
    r = replay_shared(g, np.ones(2), links, max_concurrent_kernels=1)
    assert r.path == "event" and sorted(r.schedule.end_s.tolist()) == [1.0, 2.0]


def test_a_device_the_machine_lacks_copies_through_gpu_d_mod_count(graph_of):
    """A copy on GPU 2 replayed on a 2-GPU platform takes GPU 0's route (device d is GPU d mod count, as the
    transfer models place it), with a note; a platform without GPUs is one InputError."""
    g = with_copies(graph_of(1, []), {0: (2, Engine.HTOD, GB)})
    links = copy_links(g, switch_platform())
    assert links.routes[links.route[0]] == (0, 2) and any("GPU d mod 2" in n for n in links.notes)
    no_gpu = switch_platform(gpus=0)
    with pytest.raises(InputError, match="copies to or from GPU 2 and switch has no GPU"):
        copy_links(g, no_gpu)


def test_copies_no_longer_than_their_latency_stay_off_the_network(graph_of):
    """A copy whose duration does not exceed its route's latency is latency alone: off the network, with a note."""
    g = with_copies(graph_of(2, []), {0: (0, Engine.HTOD, 8), 1: (1, Engine.HTOD, GB)})
    links = copy_links(g, switch_platform(latency_s=1e-6), durations_s=np.array([1e-6, 0.5]))
    assert links.route.tolist() == [-1, 1] and any("latency alone" in n for n in links.notes)


def test_copies_faster_than_their_route_are_capped(graph_of):
    """A duration that would need more than the route's bottleneck is capped at it, with a note."""
    g = with_copies(graph_of(1, []), {0: (0, Engine.HTOD, GB)})
    links = copy_links(g, switch_platform(), durations_s=np.array([0.01]))
    assert links.rate_bps.tolist() == [10 * GB] and any("faster alone" in n for n in links.notes)


# -- both paths give identical schedules when nothing is shared -----------------------------------------------

@st.composite
def copy_dags(draw):
    """Random DAGs (negative lags too) whose ops are kernels or copies on two GPUs, in both directions."""
    n = draw(st.integers(1, 40))
    edges = []
    for v in range(1, n):
        for u in draw(st.lists(st.integers(0, v - 1), max_size=3, unique=True)):
            edges.append((u, v, int(draw(st.sampled_from(list(EdgeKind)))), draw(st.integers(0, 1)),
                          draw(st.floats(-1e-3, 5e-3, allow_nan=False))))
    copies = {}
    for v in range(n):
        if draw(st.booleans()):
            copies[v] = (draw(st.integers(0, 1)), draw(st.sampled_from([Engine.HTOD, Engine.DTOH])),
                         draw(st.integers(1, 1 << 30)))
    dur = draw(st.lists(st.floats(0.0, 1e-2, allow_nan=False), min_size=n, max_size=n))
    release = draw(st.lists(st.floats(0.0, 1e-2, allow_nan=False), min_size=n, max_size=n))
    return n, edges, copies, np.array(dur), np.array(release)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(copy_dags())
def test_event_path_equals_the_single_pass_when_links_are_wide_enough(graph_of, case):
    """Random graphs whose copies never oversubscribe a link (an uplink wider than all of them together) get the
    same schedule, bit for bit, from the event path as from the single pass."""
    n, edges, copies, dur, release = case
    g = with_copies(graph_of(n, edges, release=release), copies)
    links = copy_links(g, switch_platform(uplink_bps=1e15, slot_bps=1e13))
    links.rate_bps[links.route >= 0] = 1e11  # every copy at 100 GB/s: 2 x 40 copies fit in the 1 PB/s uplink
    single = replay(g, links.solo_durations(g, dur), start_s=1.0)
    event = replay_shared(g, dur, links, 1.0, path="event").schedule
    assert event.start_s.tolist() == single.start_s.tolist() and event.end_s.tolist() == single.end_s.tolist()
    auto = replay_shared(g, dur, links, 1.0)
    assert auto.path == "single-pass" and auto.schedule.end_s.tolist() == single.end_s.tolist()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(copy_dags())
def test_shared_links_only_slow_copies_down(graph_of, case):
    """With a narrow uplink every dependency still holds on the event path (edges with non-negative lags exactly),
    every copy lasts at least its time alone, and the auto path agrees with the single pass whenever it keeps it."""
    n, edges, copies, dur, release = case
    g = with_copies(graph_of(n, edges, release=release), copies)
    links = copy_links(g, switch_platform(uplink_bps=2 * GB, slot_bps=4 * GB))
    solo = links.solo_durations(g, dur)
    r = replay_shared(g, dur, links)
    s = r.schedule
    assert (s.end_s - s.start_s >= solo * (1 - 1e-12) - 1e-15).all()
    for v in range(n):
        e = g.in_edges(v)
        for u, a, lag in zip(e["src"].tolist(), e["anchor"].tolist(), e["lag_s"].tolist(), strict=True):
            if lag >= 0:
                assert s.start_s[v] >= (s.start_s[u] if a == Anchor.START else s.end_s[u]) + lag - 1e-12
    if r.path == "single-pass":
        assert s.end_s.tolist() == replay(g, solo).end_s.tolist()


@pytest.mark.shared
def test_event_path_equals_the_single_pass_on_real_traces(shared_traces):
    """Every Nsight Systems, nvprof and Kineto trace, replayed with its own durations on an 8-GPU DGX A100 (one
    host link per two GPUs, but these traces use one GPU), gives the same schedule, bit for bit, on the event path
    as on the single pass, and the auto path keeps the single pass."""
    from nodecast.graph.build import build_graph
    from nodecast.machines import load_machine

    plat = Platform.from_machine(load_machine("dgx-a100"))
    paths = sorted(p for p in shared_traces.iterdir()
                   if p.name.startswith(("nsys_", "nvprof", "kineto_")))
    checked = 0
    for path in paths:
        g = build_graph(path)
        dur = g.source_durations()
        links = copy_links(g, plat, durations_s=dur)
        single = replay(g, links.solo_durations(g, dur))
        event = replay_shared(g, dur, links, path="event")
        assert event.schedule.start_s.tolist() == single.start_s.tolist(), path.name
        assert event.schedule.end_s.tolist() == single.end_s.tolist(), path.name
        auto = replay_shared(g, dur, links)
        assert auto.path == "single-pass", (path.name, auto.reason)
        checked += int(links.on_network.sum() > 0)
    assert checked >= 20  # traces with copies on the network


def test_copy_links_by_hand_plug_in(graph_of):
    """A CopyLinks made by hand (bytes from the graph, a rate and a latency per copy: the cost interface's input)
    drives the replay: one 1 GB copy at 2 GB/s after 1 ms ends at 0.501 s."""
    g = with_copies(graph_of(1, []), {0: (0, Engine.HTOD, GB)})
    links = CopyLinks(capacity_bps=np.array([10 * GB]), link_names=["l"], routes=[(0,)], route=np.array([0], np.int32),
                      rate_bps=np.array([2 * GB]), latency_s=np.array([1e-3]))
    r = replay_shared(g, np.zeros(1), links, path="event")
    assert r.schedule.end_s.tolist() == [0.501]


def test_a_peer_copy_shares_the_slot_it_writes_into(graph_of):
    """A 1 GB peer copy GPU0 -> GPU1 (its GPUs from the trace) and a 1 GB host-to-device copy to GPU1 both write
    into GPU1's 10 GB/s slot: each gets 5 GB/s and both end at 0.2 s; without the trace the peer copy stays off the
    network, with a note."""
    from nodecast.traces.kinds import CopyKind
    from nodecast.traces.kinds import OpKind as TraceKind
    from nodecast.traces.trace import Trace, TraceMeta

    trace = Trace.from_columns({"kind": np.array([TraceKind.MEMCPY] * 2), "copy_kind": np.array([CopyKind.PEER, CopyKind.HTOD]),
                                "start_ns": np.array([0, 0]), "end_ns": np.array([1, 1]), "bytes": np.array([GB, GB]),
                                "device": np.array([0, 1]), "src_device": np.array([0, -1]), "dst_device": np.array([1, -1])},
                               [], TraceMeta(source="test", format="test"), sort=False)
    g = with_copies(graph_of(2, []), {0: (0, Engine.PEER, GB), 1: (1, Engine.HTOD, GB)})
    g.ops["trace_row"][:] = [0, 1]
    plat = switch_platform(uplink_bps=40 * GB, slot_bps=10 * GB, peer=True)
    links = copy_links(g, plat, trace=trace)
    assert [links.routes[r] for r in links.route.tolist()] == [(3, 4), (0, 4)]
    r = replay_shared(g, np.zeros(2), links)
    assert r.path == "event" and r.schedule.end_s.tolist() == pytest.approx([0.2, 0.2], rel=1e-12)
    alone = copy_links(g, plat)
    assert [alone.routes[r] if r >= 0 else None for r in alone.route.tolist()] == [None, (0, 4)]
    assert any("peer copies replayed without link sharing" in n for n in alone.notes)


def test_kernel_slots_bind_only_with_more_streams_than_slots(graph_of):
    """Three independent 1 s kernels on three streams with two slots: two run at once, the third waits (event
    path); three kernels of one stream (chained by stream order) never wait for one slot: no unit, single pass."""
    g = graph_of(3, [])
    g.ops["queue"][:] = [1, 2, 3]
    links = copy_links(g, switch_platform())
    r = replay_shared(g, np.ones(3), links, max_concurrent_kernels=2)
    assert r.path == "event" and sorted(r.schedule.end_s.tolist()) == [1.0, 1.0, 2.0]
    chain = [(0, 1, EdgeKind.STREAM_ORDER, Anchor.END, 0.0), (1, 2, EdgeKind.STREAM_ORDER, Anchor.END, 0.0)]
    one = graph_of(3, chain)
    r = replay_shared(one, np.ones(3), copy_links(one, switch_platform()), max_concurrent_kernels=1)
    assert r.path == "single-pass" and "no op can wait" in r.reason and r.schedule.end_s.tolist() == [1.0, 2.0, 3.0]


def test_machine_engines_replace_the_traces(graph_of):
    """A graph built with one copy engine for every direction (its host-to-device and device-to-host copies chained)
    replayed with a DGX A100's engines (asyncEngineCount 5 in its data sheet: one per direction) loses the chain and
    overlaps the two copies; a machine that gives no count keeps the trace's engines, and says so."""
    from dataclasses import replace

    from nodecast.engine.event_replay import machine_units, replay_on_machine
    from nodecast.machines import load_machine

    chain = [(0, 1, EdgeKind.ENGINE_ORDER, Anchor.END, 0.0)]
    g = with_copies(graph_of(2, chain), {0: (0, Engine.HTOD, GB), 1: (0, Engine.DTOH, GB)}, engines={0: 1})
    g.params["shared_copy_engine"] = [0]
    dgx = load_machine("dgx-a100")
    target, layout, slots, notes = machine_units(g, dgx)
    assert layout == (1, False) and slots == 128 and target.n_edges == 0
    assert any("recorded engine order is dropped" in n for n in notes)
    dur = np.array([0.1, 0.1])
    r = replay_on_machine(g, dur, dgx)
    assert r.schedule.start_s.tolist() == [0.0, 0.0] and r.graph.n_edges == 0
    bare = replace(dgx, gpu=replace(dgx.gpu, copy_engines=None))
    target, layout, _, notes = machine_units(g, bare)
    assert layout is None and target is g and any("the trace's kept" in n for n in notes)
    assert replay_on_machine(g, dur, bare).schedule.start_s.tolist() == [0.0, 0.1]


def test_peak_load_per_key_counts_an_end_before_a_start_at_the_same_instant():
    """The single pass's check: per link (key), the largest load open at one instant; an interval ending when
    another starts does not overlap it; keys are independent; a key with no interval peaks at 0."""
    from nodecast.engine.event_replay import _peak_load

    keys = np.array([0, 0, 0, 2, 2])
    t0 = np.array([0.0, 1.0, 0.5, 0.0, 0.0])
    t1 = np.array([1.0, 2.0, 1.5, 1.0, 1.0])
    load = np.array([1.0, 2.0, 4.0, 3.0, 5.0])
    # key 0: [0,1) with [0.5,1.5) = 5, then [1,2) with [0.5,1.5) = 6 (the first ended at 1); key 2: 3 + 5 at once
    assert _peak_load(keys, t0, t1, load, 3).tolist() == [6.0, 0.0, 8.0]
