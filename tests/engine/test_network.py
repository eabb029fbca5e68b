"""The fluid max-min network on its own (no SimGrid needed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecast.engine.events import Environment
from nodecast.engine.network import FluidNetwork


def run_flows(capacities, flows, sharing="maxmin"):
    """Start ``flows`` = [(start, route, size, latency)] and return their completion times."""
    env = Environment()
    net = FluidNetwork(env, capacities, sharing=sharing)
    done = {}

    def start(item):
        i, (_, route, size, lat) = item
        net.transfer(route, size, lat, lambda _: done.__setitem__(i, env.now))

    for i, flow in enumerate(flows):
        env.schedule_at(flow[0], start, (i, flow))
    env.run()
    return done, net


def test_single_flow_takes_latency_plus_size_over_bottleneck():
    """A lone flow finishes after its latency plus its size over its slowest link."""
    done, _ = run_flows([1e9, 5e8], [(0.0, [0, 1], 1e6, 1e-5)])
    assert done[0] == pytest.approx(1e-5 + 1e6 / 5e8, rel=1e-12)


def test_two_flows_share_a_link_equally():
    """Two equal flows on one link each get half of it and finish together."""
    done, _ = run_flows([1e9], [(0.0, [0], 1e6, 0.0), (0.0, [0], 1e6, 0.0)])
    assert done[0] == pytest.approx(2e-3, rel=1e-12)
    assert done[1] == pytest.approx(2e-3, rel=1e-12)


def test_rates_are_recomputed_when_a_flow_ends():
    """When the short flow ends the long one speeds up to the full link."""
    done, _ = run_flows([1e9], [(0.0, [0], 1e6, 0.0), (0.0, [0], 3e6, 0.0)])
    assert done[0] == pytest.approx(2e-3, rel=1e-12)
    assert done[1] == pytest.approx(2e-3 + 2e6 / 1e9, rel=1e-12)


def test_textbook_max_min_allocation():
    """Flow A crosses links 0 and 1, B only 0, C only 1 (capacity 1 and 2): max-min gives A=B=0.5, C=1.5."""
    env = Environment()
    net = FluidNetwork(env, [1.0, 2.0])
    a = net.transfer([0, 1], 100.0, 0.0)
    b = net.transfer([0], 100.0, 0.0)
    c = net.transfer([1], 100.0, 0.0)
    assert (net.rate_bps(a), net.rate_bps(b), net.rate_bps(c)) == pytest.approx((0.5, 0.5, 1.5))


def test_link_crossed_twice_counts_twice():
    """A flow that crosses a link twice consumes twice its rate there."""
    done, _ = run_flows([1e9], [(0.0, [0, 0], 1e6, 0.0)])
    assert done[0] == pytest.approx(2e-3, rel=1e-12)


def test_cm02_weights_are_inverse_latency():
    """Under cm02 sharing, a flow with half the route latency gets twice the bandwidth."""
    env = Environment()
    net = FluidNetwork(env, [3e9], sharing="cm02")
    a = net.transfer([0], 1e9, 1e-5)
    b = net.transfer([0], 1e9, 2e-5)
    env.run(until_s=1e-3)
    assert net.rate_bps(a) == pytest.approx(2e9)
    assert net.rate_bps(b) == pytest.approx(1e9)


def test_link_statistics_count_bytes_and_busy_time():
    """Bytes per link and busy time per link are accumulated."""
    _, net = run_flows([1e9, 1e9], [(0.0, [0], 1e6, 0.0), (0.5, [0, 1], 1e6, 0.0)])
    assert net.link_bytes == [2e6, 1e6]
    assert net.link_busy_s[0] == pytest.approx(2e-3)
    assert net.link_busy_s[1] == pytest.approx(1e-3)


def test_bad_capacity_is_rejected():
    """A link with zero capacity is a ValueError naming the link."""
    with pytest.raises(ValueError, match="link 1 capacity"):
        FluidNetwork(Environment(), [1.0, 0.0])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(1e6, 1e10), min_size=1, max_size=5),
    st.lists(
        st.tuples(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.floats(1.0, 1e3)),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["maxmin", "cm02"]),
)
def test_allocation_is_feasible_and_max_min_fair(capacities, flows, sharing):
    """No link is overloaded and every flow has a saturated bottleneck where it has the largest normalised rate."""
    env = Environment()
    net = FluidNetwork(env, capacities, sharing=sharing)
    n = len(capacities)
    live = [net.transfer([link % n for link in route], 1e12, 0.0, weight=w) for route, w in flows]
    load = [0.0] * n
    for f in live:
        for link, count in f.coefs:
            load[link] += count * f.rate_bps
    for link in range(n):
        assert load[link] <= capacities[link] * (1 + 1e-9)
    for f in live:
        norm = f.rate_bps / f.weight
        bottleneck = False
        for link, _ in f.coefs:
            saturated = load[link] >= capacities[link] * (1 - 1e-9)
            others = [g.rate_bps / g.weight for g in live if any(lk == link for lk, _ in g.coefs)]
            if saturated and norm >= max(others) * (1 - 1e-9):
                bottleneck = True
        assert bottleneck
