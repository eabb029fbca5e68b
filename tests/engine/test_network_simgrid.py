"""The fluid network against SimGrid 3.32 (the oracle): same completion times to 1e-6."""

from __future__ import annotations

import random

import pytest

from nodecast.engine.events import Environment
from nodecast.engine.network import FluidNetwork

REL_TOL = 1e-6
N_SCENARIOS = 60


def random_scenario(seed: int, bounds: bool = False) -> dict:
    """A random platform (links, routes with repeated links) and random concurrent transfers (with ``bounds``,
    half of them capped at a random rate between 2 % and 100 % of their route's slowest link)."""
    rng = random.Random(seed)
    n_hosts = rng.randint(2, 6)
    n_links = rng.randint(1, 8)
    links = []
    for _ in range(n_links):
        bw = 10 ** rng.uniform(8, 10)
        lat = 0.0 if rng.random() < 0.3 else 10 ** rng.uniform(-6, -3.5)
        links.append({"bw": bw, "lat": lat})
    pairs = [(a, b) for a in range(n_hosts) for b in range(n_hosts) if a != b]
    routes = {}
    for a, b in pairs:
        route = [rng.randrange(n_links) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.15:
            route.append(route[0])  # a link crossed twice
        routes[(a, b)] = route
    flows = []
    for i in range(rng.randint(2, 20)):
        a, b = rng.choice(pairs)
        size = int(10 ** rng.uniform(5, 8.5))
        start = 0.0 if rng.random() < 0.3 else rng.uniform(0, 0.05)
        flows.append({"i": i, "src": a, "dst": b, "size": size, "start": start})
        if bounds and rng.random() < 0.5:
            slowest = min(links[link]["bw"] for link in routes[(a, b)])
            flows[-1]["rate"] = slowest * rng.uniform(0.02, 1.0)
    return {"seed": seed, "n_hosts": n_hosts, "links": links, "routes": routes, "flows": flows}


def route_latency(sc: dict, src: int, dst: int) -> float:
    return sum(sc["links"][link]["lat"] for link in sc["routes"][(src, dst)])


def simulate_ours(sc: dict, sharing: str) -> dict[str, float]:
    """Completion time of every flow of ``sc`` in nodecast's engine."""
    env = Environment()
    net = FluidNetwork(env, [link["bw"] for link in sc["links"]], sharing=sharing)
    done: dict[str, float] = {}

    def start(flow):
        lat = route_latency(sc, flow["src"], flow["dst"])
        name = f"s{sc['seed']}f{flow['i']}"
        net.transfer(sc["routes"][(flow["src"], flow["dst"])], flow["size"], lat, lambda _: done.__setitem__(name, env.now),
                     bound_bps=flow.get("rate"))

    for flow in sc["flows"]:
        env.schedule_at(flow["start"], start, flow)
    env.run()
    return done


def oracle_spec(scenarios: list[dict], sharing: str) -> dict:
    """One SimGrid platform holding every scenario on disjoint hosts and links."""
    spec = {"hosts": [], "links": [], "routes": [], "flows": []}
    for sc in scenarios:
        s = sc["seed"]
        base = len(spec["links"])
        for link in sc["links"]:
            spec["links"].append({"bw": link["bw"], "lat": link["lat"] if sharing == "cm02" else 0.0})
        spec["hosts"] += [f"s{s}h{h}" for h in range(sc["n_hosts"])]
        for (a, b), route in sc["routes"].items():
            spec["routes"].append({"src": f"s{s}h{a}", "dst": f"s{s}h{b}", "links": [base + link for link in route]})
        for flow in sc["flows"]:
            sleep = 0.0 if sharing == "cm02" else route_latency(sc, flow["src"], flow["dst"])
            spec["flows"].append(
                {
                    "name": f"s{s}f{flow['i']}",
                    "src": f"s{s}h{flow['src']}",
                    "dst": f"s{s}h{flow['dst']}",
                    "size": flow["size"],
                    "start": flow["start"],
                    "sleep": sleep,
                    **({"rate": flow["rate"]} if "rate" in flow else {}),
                }
            )
    return spec


@pytest.mark.simgrid
@pytest.mark.parametrize("sharing", ["maxmin", "cm02"])
def test_random_contention_matches_simgrid(simgrid_oracle, sharing):
    """Random topologies and random concurrent transfers finish at SimGrid's times (1e-6 relative)."""
    scenarios = [random_scenario(seed) for seed in range(N_SCENARIOS)]
    theirs = simgrid_oracle(oracle_spec(scenarios, sharing))
    ours: dict[str, float] = {}
    for sc in scenarios:
        ours.update(simulate_ours(sc, sharing))
    assert set(ours) == set(theirs)
    worst = max(abs(ours[k] - theirs[k]) / theirs[k] for k in ours)
    bad = {k: (ours[k], theirs[k]) for k in ours if abs(ours[k] - theirs[k]) > REL_TOL * theirs[k]}
    assert not bad, f"{len(bad)} flows differ (worst relative error {worst:.3g}): {dict(list(bad.items())[:5])}"


@pytest.mark.simgrid
def test_rate_bounded_flows_match_simgrid(simgrid_oracle):
    """Random concurrent transfers, half of them capped by a rate bound (SimGrid's Comm.set_rate), finish at
    SimGrid's times (1e-6 relative) under max-min sharing."""
    scenarios = [random_scenario(seed, bounds=True) for seed in range(100, 100 + N_SCENARIOS)]
    assert sum("rate" in f for sc in scenarios for f in sc["flows"]) > 100
    theirs = simgrid_oracle(oracle_spec(scenarios, "maxmin"))
    ours: dict[str, float] = {}
    for sc in scenarios:
        ours.update(simulate_ours(sc, "maxmin"))
    assert set(ours) == set(theirs)
    bad = {k: (ours[k], theirs[k]) for k in ours if abs(ours[k] - theirs[k]) > REL_TOL * theirs[k]}
    assert not bad, f"{len(bad)} flows differ: {dict(list(bad.items())[:5])}"


@pytest.mark.simgrid
@pytest.mark.shared
def test_starpu_platform_contention_matches_simgrid(simgrid_oracle, starpu_data):
    """Transfers on StarPU's attila platform (shared PCI links, Host crossed twice) match SimGrid's cm02 times."""
    from nodecast.engine.platform import Platform

    plat = Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")
    rng = random.Random(7)
    nodes = plat.node_names
    flows = []
    for i in range(40):
        a, b = rng.sample(range(len(nodes)), 2)
        flows.append({"i": i, "src": a, "dst": b, "size": 3686400 * rng.randint(1, 3), "start": rng.uniform(0, 0.004)})
    links = [{"bw": bw, "lat": lat} for bw, lat in zip(plat.link_bandwidth_bps, plat.link_latency_s, strict=True)]
    routes = {(a, b): list(plat.route_links[a][b]) for a in range(len(nodes)) for b in range(len(nodes)) if a != b}
    sc = {"seed": 0, "n_hosts": len(nodes), "links": links, "routes": routes, "flows": flows}
    theirs = simgrid_oracle(oracle_spec([sc], "cm02"))
    ours = simulate_ours(sc, "cm02")
    for name, t in ours.items():
        assert t == pytest.approx(theirs[name], rel=REL_TOL), name


@pytest.mark.simgrid
def test_machine_platform_copies_under_the_link_rule_match_simgrid(simgrid_oracle):
    """Copies of 4 KiB to 64 MiB on a DGX A100 built from its machine file (two GPUs behind each PCIe switch), each
    bounded by the link-time rule's rate of its size (``Platform.copy_bound_bps``, as the simulator gives them),
    finish at SimGrid's times under max-min sharing; alone, each takes ``Platform.copy_time_s``."""
    from nodecast.engine.platform import RAM, Platform
    from nodecast.machines import load_machine

    plat = Platform.from_machine(load_machine("dgx-a100"))
    rng = random.Random(11)
    gpus = plat.gpu_nodes
    flows = []
    for i in range(60):
        g = rng.choice(gpus[:4])
        a, b = (RAM, g) if rng.random() < 0.6 else (g, RAM)
        size = rng.choice([4096, 65536, 3686400, 2**26])
        flow = {"i": i, "src": a, "dst": b, "size": size, "start": rng.uniform(0, 0.002)}
        bound = plat.copy_bound_bps(a, b, size)
        if bound is not None:
            flow["rate"] = bound
        flows.append(flow)
    assert sum("rate" in f for f in flows) > 20
    # maxmin: the oracle sleeps each flow's route latency, here the sum of zero link latencies; the route's L+O
    # only delays a flow, so the lone-copy check below adds it
    links = [{"bw": bw, "lat": 0.0} for bw in plat.link_bandwidth_bps]
    n = plat.n_nodes
    routes = {(a, b): list(plat.route_links[a][b]) for a in range(n) for b in range(n) if a != b and plat.route_links[a][b]}
    sc = {"seed": 0, "n_hosts": n, "links": links, "routes": routes, "flows": flows}
    theirs = simgrid_oracle(oracle_spec([sc], "maxmin"))
    ours = simulate_ours(sc, "maxmin")
    for name, t in ours.items():
        assert t == pytest.approx(theirs[name], rel=REL_TOL), name
    for f in flows:
        alone = simulate_ours({**sc, "flows": [{**f, "start": 0.0}]}, "maxmin")[f"s0f{f['i']}"]
        a, b = f["src"], f["dst"]
        assert alone + plat.route_latency_s[a][b] == pytest.approx(plat.copy_time_s(a, b, f["size"]), rel=1e-12)
