"""Replay an OpGraph when copies share links: the simulator's event engine and fluid network.

The single pass of ``replay.py`` gives every op its own duration. That is
exact until two copies that overlap in time cross one link (several GPUs
behind one PCIe switch, peer copies, both directions of one host bridge):
then each gets a share of the link and lasts longer. ``replay_shared`` runs
the same recurrence (``replay.py``, equations 1-2)

    start[v] = max(start_s + release_s[v], max over in-edges T_anchor(u) + lag)
    end[v]   = start[v] + duration[v]

except for two kinds of *event ops*:

copies on the network
    a copy with a route on the machine (``CopyLinks``: host-to-device,
    device-to-host, peer) is a flow of the simulator's fluid network
    (``nodecast.engine.network``, max-min sharing checked against SimGrid):
    ``latency_s`` elapses, then ``bytes`` drain at the copy's max-min share
    of every link on its route, never above its own rate ``rate_bps`` (the
    rate it has alone: its transfer model's). Alone, it lasts
    ``latency_s + bytes / rate_bps``, which is its duration on both paths.
ops that need a free unit
    copies need a copy engine of their device: one per direction (HtoD,
    DtoH, peer, host-to-host), or one for every direction on a GPU with a
    single asynchronous engine; kernels a kernel slot of their device when
    ``max_concurrent_kernels`` is given. An op that finds every unit busy
    waits (first come, first served) and starts when one frees. With the
    graph's own engines (``params["copy_engines"]`` and
    ``params["shared_copy_engine"]``: the trace's recorded engines, or
    ``--copy-engines``) the graph's ENGINE_ORDER edges already serialise the
    copies and the unit never makes one wait.

On a machine (``replay_on_machine``) the units are the target's: its copy
engines (``Machine.gpu.copy_engines``, CUDA's asyncEngineCount from the GPU
data sheet or the machine file: 1 = one engine for every direction, 2 or
more = one per direction, as the graph builder reads a trace's count) and its
kernel slots (``Machine.gpu.max_concurrent_kernels``, the resident grids per
device of the CUDA Programming Guide). Where the target's engines differ from
the trace's, the trace's ENGINE_ORDER edges of those devices are dropped (they
say in which order the source's engines served the copies) and the copies
queue for the target's engines instead; a machine that gives no count keeps
the trace's. A kernel slot unit is made only for a GPU with more streams of
kernels than slots: kernels of one stream never overlap (stream order), so
with fewer streams no kernel can wait for a slot. Graph device ``d`` runs on
the machine's GPU ``d mod count`` (as the transfer models place it), its
copies through that GPU's routes and engines.

Everything else (kernels, host calls and their WAIT ops, which make host
threads block on synchronisation) keeps the single pass's recurrence; it is
evaluated in dependency order as soon as an op's inputs are known (compiled
with numba), so the event engine (``nodecast.engine.events``) only sees event
ops: their arrivals, the network's activations and completions, and the
releases of units.

Which path runs (``replay_shared(..., path="auto")``, said in the result):

1. no copy crosses a link and no op needs a unit: the single pass;
2. every link is crossed by copies of one (device, direction) chain only
   (one copy engine per direction, so they never overlap): the single pass;
3. else the single pass runs and its schedule is checked: if no link ever
   carries more than its capacity (the sum of the rates of the copies on it
   at each instant) and no unit serves more ops at once than it has, every
   copy ran at its own rate and nobody waited, so the single pass is exact;
4. otherwise the event path runs.

Both paths give bitwise identical schedules when nothing is shared: a copy
that kept its own rate for its whole life ends at ``start + duration``
exactly, as in the single pass (``tests/graph/test_event_replay.py`` checks
this on real traces and random graphs). Where the event clock lags a
computed start (calibrated lags can be negative by a few µs), the copy joins
the network at the clock while its start stays the computed one.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace
from heapq import heappush
from typing import TYPE_CHECKING, Any

import numpy as np

from nodecast.errors import InputError
from nodecast.graph.opgraph import EdgeKind, Engine, OpGraph, OpKind
from nodecast.engine.replay import Schedule, replay

if TYPE_CHECKING:
    from nodecast.engine.platform import Platform
    from nodecast.traces.trace import Trace

#: Copy engine classes that take a copy engine (as ``build.py``'s ENGINE_ORDER chains).
ENGINE_CLASSES = (Engine.HTOD, Engine.DTOH, Engine.PEER, Engine.HTOH)
#: Relative tolerance of "a link carries no more than its capacity".
_CAPACITY_REL = 1e-9


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

    def solo_durations(self, graph: OpGraph, durations_s: np.ndarray) -> np.ndarray:
        """``durations_s`` with every network copy's time alone: ``latency_s + bytes / rate_bps`` (seconds)."""
        dur = np.array(durations_s, dtype=np.float64)
        net = self.on_network
        dur[net] = self.latency_s[net] + graph.ops["bytes"][net] / self.rate_bps[net]
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
    bottleneck (the slowest link, divided by the times the route crosses
    it: a note counts the copies capped; with ``faster_than_route="keep"``
    such a copy keeps its duration and stays off the network instead);
    without durations, the bottleneck.
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
    bottleneck = _route_bottlenecks(out)[route[net]]
    if durations_s is None:
        out.rate_bps[net] = bottleneck
    else:
        fast = rate[net] > bottleneck * (1 + _CAPACITY_REL)
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


@dataclass
class SharedReplay:
    """A replay that knows about shared links: the schedule, which path ran and why.

    ``path``: ``"single-pass"`` or ``"event"``; ``reason``: why; ``copies``:
    copies on the network; ``oversubscribed``: links the single pass
    oversubscribed (name -> peak load / capacity), empty when it was exact;
    ``waits``: units (``"engine dev0 htod"``...) whose ops queued in the single
    pass (name -> peak ops at once / units); ``events``: events the engine
    processed (0 on the single pass); ``wall_s``: seconds this replay took;
    ``graph``: the graph replayed (``replay_on_machine`` drops the trace's
    copy-engine order where the machine's engines differ: the critical path of
    ``schedule`` is walked on it).
    """

    schedule: Schedule
    path: str
    reason: str
    copies: int
    oversubscribed: dict[str, float] = field(default_factory=dict)
    waits: dict[str, float] = field(default_factory=dict)
    events: int = 0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    graph: OpGraph | None = None

    @property
    def summary(self) -> str:
        """One line: which path ran and why (what the results print)."""
        return f"{self.path} ({self.reason})"


@dataclass
class _Units:
    """Units an op needs (copy engines, kernel slots): per op a unit id (-1 none), per unit a count, a name, and
    whether the graph already runs its ops one after the other (a single unit with an ENGINE_ORDER chain through
    all its ops: it can never make one wait)."""

    unit: np.ndarray
    count: list[int]
    names: list[str]
    chained: list[bool] = field(default_factory=list)

    def binding(self) -> np.ndarray:
        """Per op, the unit it may have to wait for (-1: none, or a chained one)."""
        if not any(self.chained):
            return self.unit
        return np.where(np.isin(self.unit, np.flatnonzero(self.chained)), -1, self.unit).astype(np.int32)


#: Copy engines of a GPU: (engines, shared). ``shared``: one engine serves every direction (CUDA asyncEngineCount
#: 1); else ``engines`` per direction (one when the count says only that copies of both directions overlap).
EngineLayout = tuple[int, bool]


def graph_engines(graph: OpGraph) -> dict[int, EngineLayout]:
    """The copy engines the graph was built with, per device (``OpGraph.params``)."""
    shared = set(graph.params.get("shared_copy_engine") or ())
    return {int(d): (int(k), int(d) in shared) for d, k in (graph.params.get("copy_engines") or {}).items()}


def machine_engines(async_engines: int) -> EngineLayout:
    """A GPU's copy engines from CUDA's asyncEngineCount: 1 is one engine for every direction; 2 or more copy in
    both directions at once ("2 if the device can concurrently copy memory between host and device in both
    directions", cudaDeviceProp::asyncEngineCount), taken as one engine per direction, as the graph builder reads
    a trace's count."""
    return (1, True) if async_engines == 1 else (1, False)


def describe_engines(layout: EngineLayout) -> str:
    """``one copy engine for every direction`` / ``N copy engine(s) per direction``."""
    k, shared = layout
    return "one copy engine for every direction" if shared else f"{k} copy engine{'s' if k > 1 else ''} per direction"


def _stream_ordered(graph: OpGraph) -> np.ndarray:
    """Keys (device << 40 + queue) of the GPU streams whose ops are one STREAM_ORDER chain (no two overlap)."""
    ops = graph.ops
    gpu = graph.gpu_mask()
    key = np.where(gpu, ops["device"].astype(np.int64) * (1 << 40) + ops["queue"], -1)
    streams, count = np.unique(key[gpu], return_counts=True)
    chain = graph.kind == EdgeKind.STREAM_ORDER
    u, v = graph.src[chain], graph.edge_dst()[chain]
    same = key[u] == key[v]
    links = np.bincount(np.searchsorted(streams, key[v][same]), minlength=streams.size) if streams.size else count
    return streams[links == count - 1]


def _units(graph: OpGraph, max_concurrent_kernels: int | None, engines: EngineLayout | None = None,
           gpus: int | None = None) -> _Units:
    """The units of the replay: copy engines (the graph's per device, or ``engines`` on every GPU) and kernel
    slots; with ``gpus``, graph device ``d`` uses the units of GPU ``d mod gpus``."""
    ops = graph.ops
    n = len(graph)
    unit = np.full(n, -1, np.int32)
    count: list[int] = []
    names: list[str] = []
    device = ops["device"].astype(np.int64)
    target = device % gpus if gpus else device
    copies = (ops["kind"] == OpKind.COPY) & np.isin(ops["engine"], ENGINE_CLASSES)
    if engines is None:
        layout = graph_engines(graph)
    else:
        layout = {int(d): engines for d in np.unique(target[copies & (device >= 0)])}
    for d, (k, shared) in sorted(layout.items()):
        groups = [(None, "")] if shared else [(e, " " + Engine(e).name.lower()) for e in ENGINE_CLASSES]
        for e, label in groups:
            mine = copies & (target == d) if e is None else copies & (target == d) & (ops["engine"] == e)
            if mine.any():
                unit[mine] = len(count)
                count.append(int(k))
                names.append(f"copy engine dev{d}{label}")
    if max_concurrent_kernels is not None:
        if max_concurrent_kernels < 1:
            msg = f"max_concurrent_kernels must be >= 1 (got {max_concurrent_kernels})"
            raise ValueError(msg)
        kernels = (ops["kind"] == OpKind.KERNEL) & (device >= 0)
        ordered = _stream_ordered(graph)
        for d in np.unique(target[kernels]).tolist():
            mine = kernels & (target == d)
            # NOTE: kernels of one stream the graph chains never overlap: with no more streams than slots, none waits.
            streams = np.unique(device[mine] * (1 << 40) + ops["queue"][mine])
            if np.isin(streams, ordered).all() and streams.size <= max_concurrent_kernels:
                continue
            unit[mine] = len(count)
            count.append(int(max_concurrent_kernels))
            names.append(f"kernel slots dev{d}")
    units = _Units(unit, count, names)
    if count:
        chain = graph.kind == EdgeKind.ENGINE_ORDER
        src = graph.src[chain]
        dst = graph.edge_dst()[chain]
        same = (unit[src] == unit[dst]) & (unit[dst] >= 0)
        links_in = np.bincount(unit[dst][same], minlength=len(count))
        ops_in = np.bincount(unit[unit >= 0], minlength=len(count))
        units.chained = [c == 1 and links_in[u] == ops_in[u] - 1 for u, c in enumerate(count)]
    return units


def _peak_of(t0: np.ndarray, t1: np.ndarray, load: np.ndarray) -> float:
    """The largest sum of ``load`` over intervals [t0, t1) open at one instant (ends before starts at one time)."""
    # ends first in the array, so that the stable sort by time puts an end before a start at the same instant
    order = np.argsort(np.concatenate([t1, t0]), kind="stable")
    run = np.cumsum(np.concatenate([-load, load])[order])
    return max(float(run.max()), 0.0)


def _peak_load(keys: np.ndarray, t0: np.ndarray, t1: np.ndarray, load: np.ndarray, nkeys: int) -> np.ndarray:
    """Per key, the largest sum of ``load`` over intervals [t0, t1) open at one instant (ends before starts).

    One key at a time, so that the temporaries are those of the largest key, not of all of them.
    """
    peak = np.zeros(nkeys)
    if keys.size == 0:
        return peak
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(nkeys + 1))
    for x in range(nkeys):
        idx = order[bounds[x]:bounds[x + 1]]
        if idx.size:
            peak[x] = _peak_of(t0[idx], t1[idx], load[idx])
    return peak


def _route_bottlenecks(links: CopyLinks) -> np.ndarray:
    """Per route, the most one flow may carry: min over its links of capacity / times crossed (bytes/s)."""
    out = np.zeros(len(links.routes))
    for r, route in enumerate(links.routes):
        counts: dict[int, int] = {}
        for x in route:
            counts[x] = counts.get(x, 0) + 1
        out[r] = min(links.capacity_bps[x] / c for x, c in counts.items())
    return out


def _chained_only(graph: OpGraph, links: CopyLinks, units: _Units) -> bool:
    """True when no op can wait for a unit (every unit is one engine the graph chains) and every link is crossed
    only by the copies of one such engine (they never overlap), none faster alone than its route lets it be."""
    if (units.binding() >= 0).any():
        return False
    net = np.flatnonzero(links.on_network)
    if net.size == 0:
        return True
    if (links.rate_bps[net] > _route_bottlenecks(links)[links.route[net]] * (1 + _CAPACITY_REL)).any():
        return False
    u = units.unit[net]
    if (u < 0).any():
        return False
    owner: dict[int, int] = {}
    for rid, x in np.unique(np.stack([links.route[net].astype(np.int64), u.astype(np.int64)]), axis=1).T.tolist():
        for link in links.routes[rid]:
            if owner.setdefault(link, x) != x:
                return False
    return True


def _single_pass_check(graph: OpGraph, dur: np.ndarray, links: CopyLinks, units: _Units,
                       schedule: Schedule) -> tuple[dict[str, float], dict[str, float]]:
    """Links the single-pass schedule oversubscribes, and units it overcommits (name -> peak / capacity)."""
    net = np.flatnonzero(links.on_network)
    over: dict[str, float] = {}
    if net.size:
        t0 = schedule.start_s[net] + links.latency_s[net]
        t1 = schedule.end_s[net]
        rid = links.route[net]
        rate = links.rate_bps[net]
        crossings: dict[int, dict[int, int]] = {}  # link -> {route: times the route crosses it}
        for r, route in enumerate(links.routes):
            for x in route:
                crossings.setdefault(x, {})
                crossings[x][r] = crossings[x].get(r, 0) + 1
        peak = np.zeros(len(links.capacity_bps))
        times = np.zeros(len(links.routes))
        for x, by_route in crossings.items():  # one link at a time: temporaries of one link's copies only
            mine = np.flatnonzero(np.isin(rid, list(by_route)))
            if not mine.size:
                continue
            times[:] = 0
            times[list(by_route)] = list(by_route.values())
            peak[x] = _peak_of(t0[mine], t1[mine], times[rid[mine]] * rate[mine])
        ratio = peak / links.capacity_bps
        for x in np.flatnonzero(ratio > 1 + _CAPACITY_REL).tolist():
            over[links.link_names[x]] = float(ratio[x])
    waits: dict[str, float] = {}
    binding = units.binding()
    has = np.flatnonzero(binding >= 0)
    if has.size:
        busy = dur[has] > 0
        has = has[busy]
        peak = _peak_load(binding[has].astype(np.int64), schedule.start_s[has], schedule.end_s[has],
                          np.ones(has.size), len(units.count))
        for x in range(len(units.count)):
            if peak[x] > units.count[x]:
                waits[units.names[x]] = float(peak[x] / units.count[x])
    return over, waits


def replay_shared(graph: OpGraph, durations_s: np.ndarray, links: CopyLinks, start_s: float = 0.0, *,
                  path: str = "auto", max_concurrent_kernels: int | None = None,
                  engines: EngineLayout | None = None, gpus: int | None = None,
                  engine: str = "compiled") -> SharedReplay:
    """Schedule ``graph`` with link sharing (see the module docstring); ``path``: ``auto``, ``single-pass`` or ``event``.

    ``durations_s``: per op, seconds; a network copy's duration is replaced
    by its time alone, ``latency_s + bytes / rate_bps`` (``copy_links`` built
    from the cost interface's durations makes the two equal). ``engines``:
    the copy engines of every GPU (None: the graph's own, per device);
    ``gpus``: the machine's GPU count, when graph device ``d`` runs on GPU
    ``d mod gpus`` (its units are that GPU's). ``engine``: the event path's
    loop, ``"compiled"`` (``engine.compiled``) or ``"python"`` (the simulator's
    engine and network: the reference it matches bit for bit).
    """
    if path not in ("auto", "single-pass", "event"):
        msg = f"path must be 'auto', 'single-pass' or 'event' (got {path!r})"
        raise ValueError(msg)
    t_wall = time.perf_counter()
    dur = links.solo_durations(graph, durations_s)
    units = _units(graph, max_concurrent_kernels, engines, gpus)
    ncopies = int(links.on_network.sum())
    notes = list(links.notes)

    def single_pass(reason: str) -> SharedReplay:
        return SharedReplay(replay(graph, dur, start_s), "single-pass", reason, ncopies,
                            wall_s=time.perf_counter() - t_wall, notes=notes, graph=graph)

    if path == "auto":
        waiting = bool((units.binding() >= 0).any())
        if ncopies == 0 and not waiting:
            return single_pass("no copy crosses a link of the machine and no op can wait for a copy engine or "
                               "kernel slot")
        if _chained_only(graph, links, units):
            return single_pass("every link carries the copies of one copy engine only, one after the other, and "
                               "no op can wait for a copy engine or kernel slot")
        single = replay(graph, dur, start_s)
        over, waits = _single_pass_check(graph, dur, links, units, single)
        if over or waits:
            del single  # the event path replaces it: its 16 B per op need not outlive the check
        if not over and not waits:
            return SharedReplay(single, "single-pass", "no link carried more than its capacity and no copy engine "
                                "or kernel slot more ops than it has: the single pass is exact", ncopies,
                                wall_s=time.perf_counter() - t_wall, notes=notes, graph=graph)
        reason = "; ".join([f"{k} carries up to {v:.2f}x its capacity in the single pass" for k, v in over.items()]
                           + [f"{k} would serve {v:.2f}x its units at once" for k, v in waits.items()])
    elif path == "single-pass":
        return single_pass("asked for")
    else:
        over, waits, reason = {}, {}, "asked for"
    schedule, events = _event_path(graph, dur, links, units, start_s, engine)
    return SharedReplay(schedule, "event", reason, ncopies, over, waits, events, time.perf_counter() - t_wall, notes,
                        graph)


def _event_path(graph: OpGraph, dur: np.ndarray, links: CopyLinks, units: _Units, start_s: float,
                engine: str = "compiled") -> tuple[Schedule, int]:
    """The event-driven replay: (schedule, events processed).

    ``engine``: ``"compiled"`` (``engine.compiled``: the same loop compiled, bitwise the same schedule) or
    ``"python"`` (the simulator's ``Environment`` and ``FluidNetwork`` themselves: the reference); the compiled
    loop falls back to the Python one if its buffers would overflow. Both propagate with ``engine.compiled``'s
    numba kernel over out-edges made once (``compiled.out_edges``).
    """
    if engine not in ("compiled", "python"):
        msg = f"engine must be 'compiled' or 'python' (got {engine!r})"
        raise ValueError(msg)
    from nodecast.engine import compiled as ec
    from nodecast.engine.events import Environment
    from nodecast.engine.network import FluidNetwork

    n = len(graph)
    propagate = ec.propagate
    unit_of = units.binding()
    flags = links.on_network.astype(np.int8)  # ec.EVENT: an event op; ec.START_OUT: set by out_edges
    flags[unit_of >= 0] = ec.EVENT
    out_ptr, out_code, out_eid = ec.out_edges(graph.indptr, graph.src, graph.anchor, flags)
    lag = graph.lag_s
    n_event = int(np.count_nonzero(flags & ec.EVENT))
    # NOTE: each op is pushed once at most, event ops never: the initial seeds are plain ops with no in-edge
    stack = np.empty(n - n_event + 2, np.int64)
    emit = np.empty(n_event + 1, np.int32)  # each event op becomes ready once
    seeds = np.empty(2, np.int64)
    # flows: per network op its route, rate and latency as Python values (looked up per flow)
    route_of = links.route
    routes = links.routes
    rate_of, lat_of, nbytes = links.rate_bps, links.latency_s, graph.ops["bytes"]

    def initial() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(in-edges not yet resolved per op, running max of every op's start, end, ops with no in-edge)."""
        remaining = np.empty(n, np.int32)
        np.subtract(graph.indptr[1:], graph.indptr[:-1], out=remaining, casting="unsafe")
        start = start_s + graph.ops["release_s"]  # the running max of every op's start; its start once ready
        return remaining, start, np.zeros(n), np.flatnonzero(remaining == 0)

    def first_wave(remaining: np.ndarray, start: np.ndarray, end: np.ndarray, roots: np.ndarray) -> tuple[int,
                                                                                                          np.ndarray]:
        """Time everything the roots release up to event ops: (ready event ops in ``emit``, event roots)."""
        root_event = (flags[roots] & ec.EVENT) != 0
        plain = roots[~root_event]
        end[plain] = start[plain] + dur[plain]
        seeds_all = plain.astype(np.int64) * 4 + 2
        return (propagate(seeds_all, seeds_all.size, out_ptr, out_code, out_eid, lag, remaining, start, end, dur,
                          flags, stack, emit), roots[root_event])

    remaining, start, end, roots = initial()
    if engine == "compiled":
        ready, event_roots = first_wave(remaining, start, end, roots)
        first = np.concatenate([emit[:ready], event_roots.astype(np.int32)])
        events = ec.run(out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack, emit, first,
                        unit_of, units.count, route_of, routes, rate_of, lat_of, nbytes, links.capacity_bps)
        if events is not None:
            left = int((remaining > 0).sum())
            if left:
                msg = f"event replay stalled with {left} op(s) not run (a cycle, or a unit never freed)"
                raise RuntimeError(msg)
            return Schedule(start, end, graph.origin_ns), events
        del remaining, start, end, roots  # half run: the Python loop starts over
        remaining, start, end, roots = initial()

    env = Environment()
    net = FluidNetwork(env, links.capacity_bps.tolist(), names=links.link_names, sharing="maxmin")
    queue, counter = env.queue, env.counter
    transfer = net.transfer
    flows: dict[int, Any] = {}
    free = list(units.count)
    waiting: list[deque[int]] = [deque() for _ in units.count]

    def release(ready: int) -> None:
        """Start the ``ready`` event ops found by the last propagation, or put them on the clock."""
        now = env.now
        for w in emit[:ready].tolist():
            t = start[w]
            if unit_of[w] < 0:
                # NOTE: no unit to wait for: the flow starts now with its wait until ``t`` added to its
                # latency (one event less per copy than an arrival at ``t``).
                r = route_of[w]
                if flags[w] & ec.START_OUT:
                    spread(w, 0)
                flows[w] = transfer(routes[r], float(nbytes[w]), float(t - now + lat_of[w] if t > now else lat_of[w]),
                                    flow_done, w, bound_bps=float(rate_of[w]))
            else:
                heappush(queue, (t if t > now else now, next(counter), arrive, w))

    def spread(v: int, known: int) -> None:
        seeds[0] = v * 4 + known
        ready = propagate(seeds, 1, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack, emit)
        if ready:
            release(ready)

    def arrive(w: int) -> None:
        u = unit_of[w]
        if dur[w] > 0:  # an op of no duration holds no unit
            if not free[u]:
                waiting[u].append(w)
                return
            free[u] -= 1
        begin(w)

    def begin(w: int) -> None:
        r = route_of[w]
        if r >= 0:
            if flags[w] & ec.START_OUT:
                spread(w, 0)
            flows[w] = transfer(routes[r], float(nbytes[w]), float(lat_of[w]), flow_done, w,
                                bound_bps=float(rate_of[w]))
        else:
            end[w] = start[w] + dur[w]
            spread(w, 2)
            if dur[w] > 0:
                t = end[w]
                now = env.now
                heappush(queue, (t if t > now else now, next(counter), unit_free, int(unit_of[w])))

    def flow_done(w: int) -> None:
        flow = flows.pop(w)
        # a copy that kept its own rate all along ends exactly as in the single pass
        end[w] = start[w] + dur[w] if flow.version == 1 and flow.rate_bps == rate_of[w] else env.now
        u = unit_of[w]
        if u >= 0:
            unit_free(int(u))
        spread(w, 1)

    def unit_free(u: int) -> None:
        if waiting[u]:
            w = waiting[u].popleft()
            start[w] = env.now  # it waited for this unit
            begin(w)
        else:
            free[u] += 1

    ready, event_roots = first_wave(remaining, start, end, roots)
    emit[ready:ready + event_roots.size] = event_roots
    release(ready + event_roots.size)
    env.run()
    left = int((remaining > 0).sum()) + len(flows)
    if left:
        msg = f"event replay stalled with {left} op(s) not run (a cycle, or a unit never freed)"
        raise RuntimeError(msg)
    return Schedule(start, end, graph.origin_ns), env.processed


def without_engine_order(graph: OpGraph, devices: list[int]) -> OpGraph:
    """``graph`` without the ENGINE_ORDER edges into copies of ``devices`` (same ops, order still topological)."""
    dst = graph.edge_dst()
    drop = (graph.kind == EdgeKind.ENGINE_ORDER) & np.isin(graph.ops["device"][dst], devices)
    if not drop.any():
        return graph
    keep = ~drop
    indptr = np.zeros(len(graph) + 1, np.int64)
    np.cumsum(np.bincount(dst[keep], minlength=len(graph)), out=indptr[1:])
    return replace(graph, indptr=indptr, src=graph.src[keep], kind=graph.kind[keep], anchor=graph.anchor[keep],
                   lag_s=graph.lag_s[keep])


def machine_units(graph: OpGraph, machine: Any, *, copy_engines_per_direction: int | None = None,
                  max_concurrent_kernels: int | None = None) -> tuple[OpGraph, EngineLayout | None, int | None,
                                                                        list[str]]:
    """The target's units for ``replay_shared``: (graph to replay, copy engines of every GPU or None for the
    graph's own, kernel slots per GPU or None, notes).

    Copy engines: ``copy_engines_per_direction`` when given (as ``--copy-engines`` gives the graph's), else the
    machine's (``Machine.gpu.copy_engines``, see ``machine_engines``), else the graph's. Where they differ from the
    graph's, its ENGINE_ORDER edges of those devices are dropped (``without_engine_order``). Kernel slots:
    ``max_concurrent_kernels`` when given, else the machine's.
    """
    gpu = machine.gpu
    notes: list[str] = []
    source = "given" if copy_engines_per_direction is not None else _gpu_source(machine, "copy_engines")
    if copy_engines_per_direction is not None:
        layout: EngineLayout | None = (int(copy_engines_per_direction), False)
    elif gpu.copy_engines is not None:
        layout = machine_engines(int(gpu.copy_engines))
    else:
        layout = None
    own = graph_engines(graph)
    if layout is None:
        if own:
            notes.append(f"copy engines of {machine.name}: neither its machine file nor its GPU data sheet gives "
                         "them; the trace's kept (" + ", ".join(f"GPU {d}: {describe_engines(v)}"
                                                                for d, v in sorted(own.items())) + ")")
    else:
        count = f" (asyncEngineCount {gpu.copy_engines})" if copy_engines_per_direction is None else ""
        notes.append(f"copy engines of {machine.name}: {describe_engines(layout)}{count}, {source}")
        gpus = gpu.count
        differ = sorted(d for d, v in own.items() if v != layout or d >= gpus)
        if differ:
            graph = without_engine_order(graph, differ)
            notes.append(f"the trace's copy engines of GPU(s) {differ} differ from {machine.name}'s "
                         f"({'; '.join(f'{d}: {describe_engines(own[d])}' for d in differ)}): their recorded engine "
                         "order is dropped and copies queue for the target's engines (first come, first served)")
        elif not own:
            layout = None  # no copy: nothing waits for an engine
    slots = max_concurrent_kernels if max_concurrent_kernels is not None else gpu.max_concurrent_kernels
    if slots is not None:
        origin = "given" if max_concurrent_kernels is not None else _gpu_source(machine, "max_concurrent_kernels")
        notes.append(f"kernel slots of {machine.name}: {slots} concurrent kernels per GPU, {origin}")
    return graph, layout, slots, notes


def _gpu_source(machine: Any, key: str) -> str:
    """Where a ``[gpu]`` value of ``machine`` came from (its provenance: machine file or data sheet)."""
    where = (getattr(machine, "provenance", None) or {}).get(f"gpu.{key}")
    if where:
        return f"from {where}"
    sheet = machine.gpu.sheet
    return f"from GPU data sheet {sheet.key}" if sheet is not None and getattr(sheet, key) is not None else \
        "from the machine file"


def replay_on_machine(graph: OpGraph, durations_s: np.ndarray, machine: Any, *, trace: Trace | None = None,
                      start_s: float = 0.0, path: str = "auto", max_concurrent_kernels: int | None = None,
                      copy_engines_per_direction: int | None = None,
                      platform: Platform | None = None) -> SharedReplay:
    """``replay_shared`` on a nodecast Machine: its links and routes as the simulator builds them
    (``Platform.from_machine``: the link model ``project`` uses; ``platform`` when already built), each copy's rate
    from ``durations_s`` (seconds, e.g. ``nodecast.cost.ops.costs(...).duration_s``; see ``copy_links``: a copy
    faster alone than its route keeps its duration, off the network), its
    copy engines and kernel slots (``machine_units``). The result's ``graph`` is the graph replayed and its notes
    say which engines and slots the replay used."""
    from nodecast.engine.platform import Platform

    plat = platform if platform is not None else Platform.from_machine(machine)
    target, engines, slots, unit_notes = machine_units(graph, machine,
                                                       copy_engines_per_direction=copy_engines_per_direction,
                                                       max_concurrent_kernels=max_concurrent_kernels)
    # NOTE: the cost interface's durations are the copies' times alone; the network only adds sharing.
    links = copy_links(target, plat, trace=trace, durations_s=durations_s, faster_than_route="keep")
    r = replay_shared(target, durations_s, links, start_s, path=path, max_concurrent_kernels=slots, engines=engines,
                      gpus=machine.gpu.count)
    r.notes = [*unit_notes, *r.notes]
    return r
