"""The one link-time rule (nodecast.engine.links): a copy alone on a machine's route takes AHEAD's eq. 10 at its own
size, on the simulator's platform, in the simulator itself and in the replay's copy_links; StarPU platforms keep
their measured links."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.engine.copy_routes import copy_links
from nodecast.engine.links import LARGE_COPY_BYTES, copy_rate_bps, copy_time_s, route_capacity_bps
from nodecast.engine.platform import RAM, Platform
from nodecast.graph.opgraph import Engine
from nodecast.machines import load_machine
from nodecast.models.registry import get_models
from nodecast.traces.kinds import CopyKind, MemKind
from nodecast.traces.kinds import OpKind as TraceOpKind
from nodecast.traces.trace import Trace

from .test_event_replay import with_copies

#: (copy kind, source memory, destination memory, AHEAD's class key, source node, destination node)
HTOD = (CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE, "htod_pinned", RAM, 1)
DTOH = (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED, "dtoh_pinned", 1, RAM)


def ahead_time_s(machine, plat, copy, n: int) -> float:
    """AHEAD's time of one pinned copy of ``n`` bytes on ``machine`` (``project``'s transfer model), its L+O the
    platform's route latency (so that the trace's own copies do not enter the 1-byte cost)."""
    kind, src_mem, dst_mem, key, a, b = copy
    trace = Trace.from_columns({"kind": np.array([TraceOpKind.MEMCPY]), "copy_kind": np.array([kind]),
                                "src_mem": np.array([src_mem]), "dst_mem": np.array([dst_mem]),
                                "bytes": np.array([n]), "start_ns": np.array([0]), "end_ns": np.array([10**9])})
    model = get_models(["ahead"])[0]
    model.one_byte_given_s = {key: plat.route_latency_s[a][b]}
    return float(model.project(trace, machine, machine).time_s[0])


@pytest.mark.parametrize("name", ["titan", "summit", "h100-sxm5-server", "gh200", "dgx-a100"])
@pytest.mark.parametrize("copy", [HTOD, DTOH], ids=["htod", "dtoh"])
@pytest.mark.parametrize("n", [4096, 3686400, 2**28])
def test_a_lone_copy_takes_aheads_time_at_its_own_size(name, copy, n):
    """One machine file, one link time: ``Platform.copy_time_s`` is AHEAD's (L+O) + n / BW_eff(n) at every size
    (a 4 KiB host-to-device copy over PCIe lasts 10 % longer than the link's 1 GiB rate says)."""
    machine = load_machine(name)
    plat = Platform.from_machine(machine)
    a, b = copy[4], copy[5]
    assert plat.copy_time_s(a, b, n) == pytest.approx(ahead_time_s(machine, plat, copy, n), rel=1e-12)


@pytest.mark.parametrize("n", [4096, 2**28])
def test_a_peer_copy_over_infinity_fabric_runs_at_the_links_raw_rate(n):
    """GPU0 -> GPU1 on the MI300X platform crosses their one xGMI gen-4 link (64 GB/s per direction, no packet
    model): the copy takes the route latency + n / 64e9 at every size, and builds a platform at all."""
    plat = Platform.from_machine(load_machine("mi300x-platform"))
    assert plat.copy_rate_bps(1, 2, n) == pytest.approx(64e9, rel=1e-12)
    assert plat.copy_time_s(1, 2, n) == pytest.approx(plat.route_latency_s[1][2] + n / 64e9, rel=1e-12)


def test_the_rate_is_the_capacity_for_large_copies_and_never_above_it():
    """B(n, R) reaches the route's capacity at 1 GiB (the link capacities are AHEAD's 1 GiB rates), and a larger
    copy, which AHEAD's PCIe first-request term makes a little faster, is held at the capacity."""
    plat = Platform.from_machine(load_machine("titan"))
    cap = route_capacity_bps(plat.link_bandwidth_bps, plat.route_links[RAM][1])
    assert plat.copy_rate_bps(RAM, 1, LARGE_COPY_BYTES) == cap
    assert plat.copy_rate_bps(RAM, 1, 8 * LARGE_COPY_BYTES) == cap
    assert plat.copy_rate_bps(RAM, 1, 4096) < 0.95 * cap
    assert plat.copy_bound_bps(RAM, 1, LARGE_COPY_BYTES) is None
    assert plat.copy_bound_bps(RAM, 1, 4096) == plat.copy_rate_bps(RAM, 1, 4096)


def test_a_link_crossed_twice_halves_the_rate():
    """A route that crosses a link twice carries half its capacity (the fluid network's coefficient 2)."""
    assert route_capacity_bps([8e9, 3e9], (0, 1, 0)) == 3e9
    assert route_capacity_bps([8e9, 5e9], (0, 1, 0)) == 4e9
    assert copy_rate_bps(1e6, (0, 1, 0), [8e9, 5e9], [], "read") == 4e9
    assert copy_time_s(4e6, 1e-6, 4e9) == 1e-6 + 1e-3


@pytest.mark.shared
def test_starpu_platforms_keep_their_measured_links(starpu_data):
    """A platform read from StarPU's files has no link model: every copy runs at its route's measured capacity,
    with no rate bound in the simulator."""
    plat = Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")
    assert plat.link_models == []
    for a, b in ((RAM, 1), (1, RAM), (1, 2)):
        links = plat.route_links[a][b]
        assert plat.copy_rate_bps(a, b, 4096) == route_capacity_bps(plat.link_bandwidth_bps, links)
        assert plat.copy_bound_bps(a, b, 4096) is None


def test_what_ifs_carry_the_rule():
    """Scaling the bandwidth scales the rate at every size; an added GPU copies like its original."""
    plat = Platform.from_machine(load_machine("titan"))
    fast = plat.with_bandwidth_scale(2.0)
    assert fast.copy_rate_bps(RAM, 1, 4096) == pytest.approx(2 * plat.copy_rate_bps(RAM, 1, 4096), rel=1e-15)
    two = plat.with_gpu_count(2)
    assert two.copy_time_s(RAM, 2, 4096) == plat.copy_time_s(RAM, 1, 4096)
    assert two.copy_bound_bps(2, RAM, 4096) == plat.copy_bound_bps(1, RAM, 4096)


def test_copy_links_without_durations_uses_the_rule(graph_of):
    """The replay's copies on a machine, without the cost interface's durations, last the rule's time alone."""
    plat = Platform.from_machine(load_machine("titan"))
    g = with_copies(graph_of(3, []), {0: (0, Engine.HTOD, 4096), 1: (0, Engine.HTOD, 3686400),
                                      2: (0, Engine.DTOH, 4096)})
    solo = copy_links(g, plat).solo_durations(g, np.zeros(3))
    assert solo.tolist() == [plat.copy_time_s(RAM, 1, 4096), plat.copy_time_s(RAM, 1, 3686400),
                             plat.copy_time_s(1, RAM, 4096)]


def test_the_simulator_times_a_lone_copy_by_the_rule():
    """A task on a GPU of a machine reading one 4 KiB datum: the simulated copy takes AHEAD's time at 4 KiB
    (before the rule it drained at the link's 1 GiB rate, 9 % faster)."""
    from nodecast.runtime import KernelModels, Overheads, RuntimeOptions, Simulation, TaskGraph
    from nodecast.graph.taskgraph import R

    machine = load_machine("titan")
    plat = Platform.from_machine(machine)
    g = TaskGraph()
    a = g.add_data("A", 4096)
    g.add_task("k", [(a, R)], async_ok=False)
    models = KernelModels(None, "titan", provider=lambda q: 1e-6)
    res = Simulation(g, plat, models, RuntimeOptions(overheads=Overheads.none())).run()
    assert res.makespan_s == pytest.approx(ahead_time_s(machine, plat, HTOD, 4096) + 1e-6, rel=1e-12)
