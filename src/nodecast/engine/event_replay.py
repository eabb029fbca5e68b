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
    a copy with a route on the machine (``CopyLinks``, ``copy_routes``:
    host-to-device, device-to-host, peer) is a flow of the simulator's fluid
    network (``nodecast.engine.network``, max-min sharing checked against
    SimGrid): ``latency_s`` elapses, then ``bytes`` drain at the copy's
    max-min share of every link on its route, never above its own rate
    ``rate_bps`` (the rate it has alone: its transfer model's). Alone, it
    lasts ``latency_s + bytes / rate_bps`` (the link-time rule of
    ``nodecast.engine.links``), which is its duration on both paths.
ops that need a free unit
    copies need a copy engine of their device, kernels a kernel slot of their
    device when ``max_concurrent_kernels`` is given (``gpu_units``: which
    units, the graph's or the target machine's). An op that finds every unit
    busy waits (first come, first served) and starts when one frees.

On a machine (``replay_on_machine``) graph device ``d`` runs on the machine's
GPU ``d mod count`` (as the transfer models place it), its copies through
that GPU's routes and engines.

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
exactly, as in the single pass (``tests/engine/test_event_replay.py`` checks
this on real traces and random graphs). Where the event clock lags a
computed start (calibrated lags can be negative by a few µs), the copy joins
the network at the clock while its start stays the computed one.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from heapq import heappush
from typing import TYPE_CHECKING, Any

import numpy as np

from nodecast.engine.copy_routes import CAPACITY_REL, CopyLinks, copy_links
from nodecast.engine.gpu_units import EngineLayout, Units, machine_units, op_units
from nodecast.engine.replay import Schedule, replay
from nodecast.graph.opgraph import OpGraph

if TYPE_CHECKING:
    from nodecast.engine.platform import Platform
    from nodecast.traces.trace import Trace

__all__ = ["CopyLinks", "SharedReplay", "copy_links", "machine_units", "replay_on_machine", "replay_shared"]


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



def _chained_only(graph: OpGraph, links: CopyLinks, units: Units) -> bool:
    """True when no op can wait for a unit (every unit is one engine the graph chains) and every link is crossed
    only by the copies of one such engine (they never overlap), none faster alone than its route lets it be."""
    if (units.binding() >= 0).any():
        return False
    net = np.flatnonzero(links.on_network)
    if net.size == 0:
        return True
    if (links.rate_bps[net] > links.route_capacities_bps()[links.route[net]] * (1 + CAPACITY_REL)).any():
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


def _single_pass_check(graph: OpGraph, dur: np.ndarray, links: CopyLinks, units: Units,
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
        for x in np.flatnonzero(ratio > 1 + CAPACITY_REL).tolist():
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
    units = op_units(graph, max_concurrent_kernels, engines, gpus)
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


def _event_path(graph: OpGraph, dur: np.ndarray, links: CopyLinks, units: Units, start_s: float,
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


def replay_on_machine(graph: OpGraph, durations_s: np.ndarray, machine: Any, *, trace: Trace | None = None,
                      start_s: float = 0.0, path: str = "auto", max_concurrent_kernels: int | None = None,
                      copy_engines_per_direction: int | None = None,
                      platform: Platform | None = None) -> SharedReplay:
    """``replay_shared`` on a nodecast Machine: its links and routes as the simulator builds them
    (``Platform.from_machine``: the link-time rule of ``links``, AHEAD, the link model ``project`` uses; ``platform``
    when already built), each copy's rate
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
