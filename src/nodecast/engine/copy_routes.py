"""Which copies of a graph cross which links of a platform, and what each costs alone (``copy_links``).

A copy with a route on the platform (host-to-device, device-to-host, peer
between two GPUs that copy directly) becomes a flow of the replay's fluid
network (``event_replay``): ``latency_s`` elapses, then ``bytes`` drain at the
copy's max-min share of every link on its route, never above its own rate
``rate_bps``. Alone, it lasts ``latency_s + bytes / rate_bps``: the link-time
rule of ``nodecast.engine.links`` (equation 1), with the route's latency, and
a rate that is the rule's (equation 2) or the one that makes the cost
interface's duration come out, at most the route's capacity.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nodecast.engine.links import copy_time_s, route_capacity_bps
from nodecast.errors import InputError
from nodecast.graph.opgraph import Engine, OpGraph, OpKind

if TYPE_CHECKING:
    from nodecast.engine.platform import Platform
    from nodecast.traces.trace import Trace

#: Relative tolerance of "a link carries no more than its capacity".
CAPACITY_REL = 1e-9


@dataclass
class CopyLinks:
    """Which copies of a graph cross which links, and what each costs alone.

    ``capacity_bps`` (per link, bytes/s) and ``link_names``; ``routes``: link
    indices of each route (a link may repeat: crossed twice); per op,
    ``route`` (int32, -1: not on the network), and for ops on it
    ``rate_bps`` (the copy's rate alone, bytes/s: its cap when sharing) and
    ``latency_s`` (before its bytes flow). ``notes`` say what was assumed.
    """

    capacity_bps: np.ndarray
    link_names: list[str]
    routes: list[tuple[int, ...]]
    route: np.ndarray
    rate_bps: np.ndarray
    latency_s: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def on_network(self) -> np.ndarray:
        """Boolean mask of the ops that are flows of the network."""
        return self.route >= 0

    def route_capacities_bps(self) -> np.ndarray:
        """Per route, the most one flow may carry: min over its links of capacity / times crossed (bytes/s)."""
        out = np.zeros(len(self.routes))
        for r, route in enumerate(self.routes):
            out[r] = route_capacity_bps(self.capacity_bps, route)
        return out

    def solo_durations(self, graph: OpGraph, durations_s: np.ndarray) -> np.ndarray:
        """``durations_s`` with every network copy's time alone: ``latency_s + bytes / rate_bps`` (seconds; the
        link-time rule's equation 1)."""
        dur = np.array(durations_s, dtype=np.float64)
        net = self.on_network
        dur[net] = copy_time_s(graph.ops["bytes"][net], self.latency_s[net], self.rate_bps[net])
        return dur


def copy_links(graph: OpGraph, platform: Platform, *, trace: Trace | None = None,
               durations_s: np.ndarray | None = None, faster_than_route: str = "cap") -> CopyLinks:
    """The network copies of ``graph`` on ``platform`` (a ``nodecast.engine.platform.Platform``, e.g. from a machine).

    Host-to-device copies take the route from RAM to their GPU, device-to-host
    the reverse, peer copies the route between their two GPUs (from
    ``trace``'s ``src_device``/``dst_device``; without ``trace`` they stay off
    the network, with a note) when the platform copies peer to peer, else
    they stay off the network with a note. Graph device ``d`` is the
    platform's GPU ``d mod count`` (with a note when the graph has more;
    InputError when the platform has no GPU). Each copy's
    latency is its route's latency. Its rate: with ``durations_s`` (the cost
    interface's per-op times, seconds), the rate that makes ``latency +
    bytes / rate`` its duration (a copy shorter than its route's latency is
    left off the network: it is latency alone), at most its route's
    capacity (the slowest link, divided by the times the route crosses
    it: a note counts the copies capped; with ``faster_than_route="keep"``
    such a copy keeps its duration and stays off the network instead);
    without durations, the link-time rule's rate of its size on its route
    (``Platform.copy_rate_bps``: the capacity on a platform without link
    models), so that it lasts ``Platform.copy_time_s`` alone.
    """
    if faster_than_route not in ("cap", "keep"):
        msg = f"faster_than_route must be 'cap' or 'keep' (got {faster_than_route!r})"
        raise ValueError(msg)
    n = len(graph)
    ops = graph.ops
    engine, device, nbytes = ops["engine"], ops["device"], ops["bytes"]
    copies = np.flatnonzero((ops["kind"] == OpKind.COPY) & (nbytes > 0))
    gpus = platform.gpu_nodes
    notes: list[str] = []
    need = int(device[copies].max()) + 1 if copies.size else 0
    if copies.size and not gpus:
        raise InputError(f"the graph copies to or from GPU {need - 1} and {platform.name} has no GPU",
                         path=graph.source or None, key="device", hint="Replay on a machine with GPUs")
    if need > len(gpus):
        notes.append(f"the graph copies to or from GPU(s) up to {need - 1} and {platform.name} has {len(gpus)}: "
                     f"device d copies through the routes of GPU d mod {len(gpus)}, as the transfer models place it")
    routes: list[tuple[int, ...]] = []
    ends: list[tuple[int, int]] = []  # per route, its (source, destination) memory nodes
    route = np.full(n, -1, np.int32)
    latency = np.zeros(n)
    pairs = np.full((copies.size, 2), -1, np.int64)
    eng = engine[copies]
    gpu_node = np.array(gpus, np.int64)
    node = gpu_node[np.clip(device[copies], 0, None) % len(gpus)] if copies.size else np.zeros(0, np.int64)
    htod, dtoh = eng == Engine.HTOD, eng == Engine.DTOH
    pairs[htod, 0], pairs[htod, 1] = 0, node[htod]
    pairs[dtoh, 0], pairs[dtoh, 1] = node[dtoh], 0
    peer = eng == Engine.PEER
    if peer.any():
        if trace is None:
            notes.append(f"{int(peer.sum())} peer copies replayed without link sharing (no trace to say their GPUs)")
        else:
            rows = ops["trace_row"][copies[peer]]
            src = gpu_node[np.clip(trace["src_device"][rows], 0, None) % len(gpus)]
            dst = gpu_node[np.clip(trace["dst_device"][rows], 0, None) % len(gpus)]
            ok = np.array([a != b and bool(platform.peer[a][b]) for a, b in zip(src.tolist(), dst.tolist(), strict=True)])
            idx = np.flatnonzero(peer)
            pairs[idx[ok], 0], pairs[idx[ok], 1] = src[ok], dst[ok]
            if (~ok).any():
                notes.append(f"{int((~ok).sum())} peer copies between GPUs without a peer path on {platform.name} "
                             "(or landing on one GPU of it) replayed without link sharing")
    known = np.flatnonzero(pairs[:, 0] >= 0)
    if known.size:
        uniq, inverse = np.unique(pairs[known], axis=0, return_inverse=True)
        rid_of = np.full(len(uniq), -1, np.int32)
        lat_of = np.zeros(len(uniq))
        for j, (a, b) in enumerate(uniq.tolist()):
            links = platform.route_links[a][b]
            if links:
                rid_of[j] = len(routes)
                routes.append(tuple(links))
                ends.append((a, b))
                lat_of[j] = platform.route_latency_s[a][b]
        v = copies[known]
        route[v] = rid_of[inverse.ravel()]
        latency[v] = lat_of[inverse.ravel()]
    capacity = np.array(platform.link_bandwidth_bps, np.float64)
    rate = np.zeros(n)
    net = np.flatnonzero(route >= 0)
    if durations_s is not None:
        dur = np.asarray(durations_s, np.float64)[net]
        bw_time = dur - latency[net]
        keep = bw_time > 0
        if (~keep).any():
            notes.append(f"{int((~keep).sum())} copies last no longer than their route's latency: replayed as "
                         "latency alone, off the network")
            route[net[~keep]] = -1
        net, bw_time = net[keep], bw_time[keep]
        rate[net] = nbytes[net] / bw_time
    out = CopyLinks(capacity_bps=capacity, link_names=list(platform.link_names), routes=routes, route=route,
                    rate_bps=rate, latency_s=np.where(route >= 0, latency, 0.0), notes=notes)
    if durations_s is None:
        if net.size:  # the rule once per (route, size): the copies of one size on one route have one rate
            keys, inverse = np.unique(np.stack([route[net].astype(np.int64), nbytes[net]]), axis=1,
                                      return_inverse=True)
            per_key = [platform.copy_rate_bps(*ends[r], float(b)) for r, b in keys.T.tolist()]
            out.rate_bps[net] = np.array(per_key, np.float64)[inverse.ravel()]
    else:
        bottleneck = out.route_capacities_bps()[route[net]]
        fast = rate[net] > bottleneck * (1 + CAPACITY_REL)
        if fast.any() and faster_than_route == "keep":
            out.route[net[fast]] = -1
            out.rate_bps[net[fast]] = 0.0
            out.latency_s[net[fast]] = 0.0
            notes.append(f"{int(fast.sum())} copies are faster alone than {platform.name}'s links carry (a time kept "
                         "from the source, or a model that does not see these links): replayed at their own time, "
                         "off the network")
        elif fast.any():
            out.rate_bps[net[fast]] = bottleneck[fast]
            notes.append(f"{int(fast.sum())} copies would be faster alone than {platform.name}'s links carry: their "
                         "rate is the route's capacity (they take longer than their durations say)")
    return out
