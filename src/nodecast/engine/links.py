"""One link-time rule: how long a copy of n bytes takes alone on a route, for the replay and the simulator.

A route R is a sequence of directed links (a link may repeat: crossed twice,
as StarPU's ``Host`` link on GPU-to-GPU routes between sockets). Each link x
has a capacity C_x (bytes/s), which the copies crossing it share max-min in
the fluid network (``nodecast.engine.network``). A copy of n bytes alone on R
takes

    T(n, R) = L_R + n / B(n, R)                                   (1)
    B(n, R) = min over the links x of R of  min(E_x(n), C_x) / k_x   (2)

where k_x is the number of times R crosses x and L_R the route's latency,
which elapses before the bytes flow. On a platform built from a nodecast
Machine (``machine_links``, ``Platform.from_machine``) this is AHEAD's eq. 10,
the model ``project`` and ``forecast`` use for copies, at the copy's own size:

* E_x(n) is AHEAD's effective bandwidth of the machine link under x for a copy
  of n bytes (eq. 2, ``n / wire_time``, PCIe TLP or NVLink flit overheads;
  ``nodecast.models.link_time.effective_bandwidth_bps``) in the copy's
  direction: the GPU reads host memory on a copy from RAM (eq. 4 / eq. 6) and
  writes on every other (eq. 5 / eq. 7), times the what-if factor of
  ``--bandwidth-scale`` (``LinkModel``);
* C_x is E_x of a large copy (``LARGE_COPY_BYTES``, 1 GiB: per-copy terms such
  as PCIe's first request are below 1e-6 of its time there) in the direction
  the link carries: read when x is on a route from RAM to a GPU, else write;
* L_R is AHEAD's 1-byte cost L+O of the route's copy class (pinned
  host-to-device, pinned device-to-host, peer), resolved as ``project``
  resolves it for the machine alone (``nodecast.models.one_byte``: measured
  in the machine file, else AHEAD's measured default).

Links without a model (a StarPU platform file: their bandwidths and latencies
are measurements, not a rule) have E_x = C_x at every size, and their route
latency is the sum of their links'. For every route, B(n, R) is at most the
route's capacity ``route_capacity_bps`` = min over x of C_x / k_x, the most one
copy can carry there, and equals it for large copies.

Who calls it:

* ``Platform.from_machine`` takes its links, capacities and route latencies
  from ``machine_links``, and its scheduler calibration (StarPU's
  ``starpu_transfer_predict`` inputs) from ``route_capacity_bps``;
* the simulator gives each copy the rate bound ``Platform.copy_bound_bps``:
  B(n, R) where it is below the route's capacity, so that a copy alone takes
  (1) on the fluid network, which still shares the capacities when copies
  meet;
* the replay's ``copy_links`` (``nodecast.engine.copy_routes``): each copy's
  route latency L_R and capacity, and its rate alone B(n, R) when no durations
  are given; with the cost interface's durations (which may be scaled from a
  measured run), the rate that makes ``L_R + n / rate`` its duration, at most
  the route's capacity.

Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.machines.topology import Link

#: Copy size at which a machine link's capacity is AHEAD's effective bandwidth, bytes: "large" (1 GiB).
LARGE_COPY_BYTES = 2**30

Direction = Literal["read", "write"]


@dataclass(frozen=True)
class LinkModel:
    """What gives a directed link's effective bandwidth at every copy size: its machine ``link`` (AHEAD, eq. 2)
    and the what-if factor ``scale`` applied to it (``Platform.with_bandwidth_scale``)."""

    link: Link
    scale: float = 1.0

    def bandwidth_bps(self, nbytes: float, direction: Direction) -> float:
        """AHEAD's effective bandwidth of a copy of ``nbytes`` on this link in ``direction``, bytes/s."""
        from nodecast.models.link_time import effective_bandwidth_bps

        return float(effective_bandwidth_bps(self.link, nbytes, direction)) * self.scale


def crossings(route: Sequence[int]) -> dict[int, int]:
    """Times ``route`` crosses each of its links, in order of first crossing."""
    counts: dict[int, int] = {}
    for x in route:
        counts[x] = counts.get(x, 0) + 1
    return counts


def route_capacity_bps(capacity_bps: Sequence[float], route: Sequence[int]) -> float:
    """The most one copy carries on ``route``: min over its links of capacity / times crossed (bytes/s)."""
    return min(capacity_bps[x] / c for x, c in crossings(route).items())


def copy_rate_bps(nbytes: float, route: Sequence[int], capacity_bps: Sequence[float],
                  models: Sequence[LinkModel | None], direction: Direction) -> float:
    """B(n, R), equation (2): the rate of a copy of ``nbytes`` alone on ``route``, bytes/s.

    ``models``: per link, its ``LinkModel`` (None, or an empty sequence for every link: the capacity at every
    size); ``direction``: ``"read"`` on a route from RAM, else ``"write"``.
    """
    rate = math.inf
    for x, k in crossings(route).items():
        cap = capacity_bps[x]
        model = models[x] if models else None
        if model is not None:
            cap = min(model.bandwidth_bps(nbytes, direction), cap)
        rate = min(rate, cap / k)
    return rate


def copy_time_s(nbytes: float, latency_s: float, rate_bps: float) -> float:
    """T(n, R), equation (1): ``latency_s + nbytes / rate_bps`` (seconds)."""
    return latency_s + nbytes / rate_bps


@dataclass
class MachineLinks:
    """The links and routes of a Machine as the simulator's platform holds them (``machine_links``).

    Memory nodes are RAM then one per GPU; ``link_names`` name the directed links (``<link id>:<from>-><to>``,
    two per machine link), with their capacities, latencies (the machine file's, 0 when none) and models;
    ``route_links[a][b]`` the directed links of the route from node ``a`` to node ``b`` and
    ``route_latency_s[a][b]`` its L+O; ``peer[a][b]`` whether GPUs ``a`` and ``b`` copy directly (their route
    crosses no CPU socket). ``notes`` say where the 1-byte costs come from.
    """

    node_names: list[str]
    link_names: list[str]
    link_bandwidth_bps: list[float]
    link_latency_s: list[float]
    link_models: list[LinkModel | None]
    route_links: list[list[tuple[int, ...] | None]]
    route_latency_s: list[list[float]]
    peer: list[list[bool]]
    notes: list[str] = field(default_factory=list)


def machine_links(machine: Machine) -> MachineLinks:
    """Links, capacities and routes of ``machine`` by the rule of this module.

    Every Link becomes two directed links; routes follow ``Machine.route``. RAM is reached from each GPU through
    the socket the GPU is attached to (data is assumed pinned in that socket's memory). A GPU-to-GPU route is
    peer-to-peer unless it crosses a CPU socket, in which case the copy is staged through RAM. Capacities C_x and
    latencies L_R as the module docstring says (before issue 13 the links carried their raw rate, PCIe eq. 3,
    NVLink eq. 8, and routes the machine file's link latencies, 0 when none was given).
    """
    from nodecast.models.one_byte import resolve_one_byte
    from nodecast.traces.kinds import TransferClass

    ngpu = machine.gpu.count
    names = ["RAM"] + [f"CUDA{i}" for i in range(ngpu)]
    endpoints = [None] + [f"gpu{i}" for i in range(ngpu)]
    link_names: list[str] = []
    link_lat: list[float] = []
    link_of: list[Link] = []
    directed: dict[tuple[str, str, str], int] = {}
    for link in machine.links:
        a, b = link.endpoints
        for src, dst in ((a, b), (b, a)):
            directed[(link.id, src, dst)] = len(link_names)
            link_names.append(f"{link.id}:{src}->{dst}")
            link_lat.append(link.latency_s or 0.0)
            link_of.append(link)
    n = len(names)

    def directed_route(src_ep: str, dst_ep: str) -> tuple[tuple[int, ...], bool]:
        hops = machine.route(src_ep, dst_ep)
        here = src_ep
        out = []
        crosses_cpu = False
        for k, link in enumerate(hops):
            there = link.other(here)
            out.append(directed[(link.id, here, there)])
            if k < len(hops) - 1 and there.startswith("cpu"):
                crosses_cpu = True
            here = there
        return tuple(out), crosses_cpu

    klass = (TransferClass.HTOD_PINNED, TransferClass.DTOH_PINNED, TransferClass.PEER)
    one_byte = resolve_one_byte(None, None, machine, klass)
    htod_s, dtoh_s, peer_s = (one_byte.seconds[k] for k in klass)
    route_links: list[list[tuple[int, ...] | None]] = [[None] * n for _ in range(n)]
    route_latency = [[0.0] * n for _ in range(n)]
    peer = [[False] * n for _ in range(n)]
    reads: set[int] = set()  # directed links toward a GPU on a host-to-GPU route
    for i in range(n):
        route_links[i][i] = ()
    for g in range(1, n):
        socket = f"cpu{machine.gpu.cpu_socket[g - 1]}"
        for a, b, ea, eb, lat in ((0, g, socket, endpoints[g], htod_s), (g, 0, endpoints[g], socket, dtoh_s)):
            links, _ = directed_route(ea, eb)
            route_links[a][b] = links
            route_latency[a][b] = lat
            if a == 0:
                reads.update(links)
        for h in range(1, n):
            if h == g:
                continue
            links, via_cpu = directed_route(endpoints[g], endpoints[h])
            route_links[g][h] = links
            route_latency[g][h] = peer_s
            peer[g][h] = not via_cpu
    models = [LinkModel(link) for link in link_of]
    link_bw = [m.bandwidth_bps(LARGE_COPY_BYTES, "read" if x in reads else "write") for x, m in enumerate(models)]
    return MachineLinks(node_names=names, link_names=link_names, link_bandwidth_bps=link_bw, link_latency_s=link_lat,
                        link_models=list(models), route_links=route_links, route_latency_s=route_latency, peer=peer,
                        notes=one_byte.notes())
