"""Fluid network model: concurrent transfers share link bandwidth max-min fairly.

This is the communication model of the StarPU-over-SimGrid paper (section 6,
Fig. 2b): a transfer is a *flow* along a route of links; each link has a
capacity in bytes/s (per direction: up- and down-links are separate links);
flows that cross a link share its capacity. Rates follow max-min fairness,
computed by progressive filling: raise every unfixed flow's rate together
until some link saturates, freeze the flows on that link, repeat. A flow that
crosses the same link twice (SimGrid routes do this, e.g. StarPU's ``Host``
link on GPU->GPU routes between sockets) consumes twice its rate there.

Timeline of one transfer (as in SimGrid's CM02 model): the route's latency
(sum of its links' latencies) elapses first without using bandwidth, then the
flow joins the sharing and drains ``size_bytes`` at its current rate. Rates are
recomputed whenever a flow joins or leaves, and only over the connected
component of flows and links that the change touches (the other components'
rates cannot change). Completion events carry a version number; a flow whose
rate changed gets a new event and its old one is ignored when it pops.

A flow may carry a *rate bound* (``transfer(..., bound_bps=B)``): it never
goes faster than B even on idle links, as a copy whose own cost (DMA setup,
per-chunk overheads) caps it below the link's capacity. Bounded max-min
fairness raises every unfixed rate together until a link saturates or a flow
reaches its bound, whichever comes first; flows without a bound are shared
exactly as before (SimGrid's ``Comm.set_rate``, checked against SimGrid too).

Two sharing policies:

``"maxmin"`` (default)
    Pure max-min fairness: every flow has weight 1.
``"cm02"``
    SimGrid's CM02 network model with ``network/weight-S:0``: a flow's sharing
    *penalty* is its route latency (1 when the latency is 0) and flows get rates
    in proportion to 1/penalty ("RTT unfairness"). This is what StarPU's own
    SimGrid simulation computes with the platform files it writes.

Validation against SimGrid 3.32 (the oracle, ``tests/sim/test_network_simgrid.py``):
both policies reproduce SimGrid's completion times to 1e-6 relative on random
platforms and random concurrent transfers when SimGrid runs
``--cfg=network/model:CM02`` (bandwidth and latency factors 1, weight-S 0),
``--cfg=network/crosstraffic:0`` (no 5 % reverse-traffic on back routes),
``--cfg=network/TCP-gamma:0`` (no window bound gamma/(2 x latency)),
``--cfg=maxmin/precision:1e-9`` and ``--cfg=surf/precision:1e-12``. For
``"maxmin"`` the SimGrid platform gets zero link latencies and each sender
sleeps its route latency before sending, which makes every SimGrid penalty 1
(pure max-min) while keeping the latency-then-bandwidth timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from heapq import heappush
from itertools import chain
from typing import Any

from nodecast.engine.events import Environment

SHARING_POLICIES = ("maxmin", "cm02")
#: Links whose fair share lies within this relative distance of the smallest
#: one saturate in the same round of progressive filling.
_TIE_REL = 1e-12

#: A sharing class: (route id, weight), or (route id, weight, rate bound in bytes/s).
SharingClass = tuple[int, float] | tuple[int, float, float]


class Flow:
    """One transfer: its route, remaining bytes and current rate.

    ``coefs`` is a tuple of ``(link_index, times_crossed)`` pairs; ``cls`` is
    the flow's sharing class ``(route id, weight[, bound])``: flows of one
    class always get the same rate. ``rate_bps`` keeps the last rate after the
    flow ended and ``version`` counts rate assignments (1: the flow kept the
    rate it started with).
    """

    __slots__ = (
        "fid",
        "coefs",
        "cls",
        "size_bytes",
        "remaining_bytes",
        "rate_bps",
        "last_s",
        "weight",
        "latency_s",
        "start_s",
        "active_s",
        "end_s",
        "version",
        "on_done",
        "arg",
    )

    def __init__(
        self,
        fid: int,
        coefs: tuple[tuple[int, int], ...],
        cls: tuple[int, float],
        size_bytes: float,
        latency_s: float,
        weight: float,
        start_s: float,
        on_done: Callable[[Any], None] | None,
        arg: Any,
    ) -> None:
        self.fid = fid
        self.coefs = coefs
        self.cls = cls
        self.size_bytes = size_bytes
        self.remaining_bytes = float(size_bytes)
        self.rate_bps = 0.0
        self.last_s = start_s
        self.weight = weight
        self.latency_s = latency_s
        self.start_s = start_s
        self.active_s = start_s + latency_s
        self.end_s = float("nan")
        self.version = 0
        self.on_done = on_done
        self.arg = arg


class FluidNetwork:
    """Links with capacities, and flows sharing them max-min fairly.

    Args:
        env: the event kernel that times activations and completions.
        capacities_bps: capacity of each link in bytes/s (> 0); links are
            referred to by their index in this sequence.
        names: optional link names (for reports).
        sharing: ``"maxmin"`` or ``"cm02"`` (see the module docstring).

    Attributes:
        link_bytes: bytes carried by each link so far (a flow crossing a link
            twice counts twice).
        link_busy_s: time during which each link carried at least one flow.

    Implementation notes: flows with the same route and weight form a *class*
    and share one rate. A change (a flow joins or leaves) recomputes rates over
    the connected component of classes it touches; the max-min solution of a
    component depends only on its classes and their flow counts, so solutions
    are memoised under that key (a runtime moving tiles over a few routes
    meets the same few configurations again and again). Only flows whose rate
    changed get a new completion event.
    """

    _CACHE_LIMIT = 200_000

    def __init__(
        self,
        env: Environment,
        capacities_bps: Sequence[float],
        *,
        names: Sequence[str] | None = None,
        sharing: str = "maxmin",
    ) -> None:
        if sharing not in SHARING_POLICIES:
            msg = f"sharing must be one of {SHARING_POLICIES} (got {sharing!r})"
            raise ValueError(msg)
        for i, c in enumerate(capacities_bps):
            if not (c > 0 and c != float("inf")):
                msg = f"link {i} capacity must be a finite number > 0 bytes/s (got {c!r})"
                raise ValueError(msg)
        self.env = env
        self.capacity_bps = [float(c) for c in capacities_bps]
        self.names = list(names) if names is not None else [f"link{i}" for i in range(len(self.capacity_bps))]
        self.sharing = sharing
        n = len(self.capacity_bps)
        self._link_nflows = [0] * n
        self._link_since = [0.0] * n
        self.link_bytes = [0.0] * n
        self.link_busy_s = [0.0] * n
        self._route_ids: dict[tuple[int, ...], int] = {}
        self._route_coefs: list[tuple[tuple[int, int], ...]] = []
        self._route_links: list[set[int]] = []
        self._route_adj: list[list[int]] = []  # routes sharing at least one link (itself included)
        self._route_classes: list[dict[SharingClass, None]] = []  # active classes per route
        # NOTE: routes with an active class, and each route's adjacency list as
        # route -> position: the component walk then looks at the few active
        # routes instead of every adjacent one (routes sharing the Host link
        # are all adjacent), in the same order as walking the adjacency list.
        self._active_routes: dict[int, None] = {}
        self._route_adj_pos: list[dict[int, int]] = []
        self._class_flows: dict[SharingClass, dict[int, Flow]] = {}
        self._class_rate: dict[SharingClass, float] = {}
        self._cache: dict[frozenset[tuple[SharingClass, int]], dict[SharingClass, float]] = {}
        self._next_fid = 0
        self.active: dict[int, Flow] = {}
        self.completed = 0
        self.reallocations = 0
        self.cache_hits = 0

    # ------------------------------------------------------------------ API
    def transfer(
        self,
        route: Sequence[int],
        size_bytes: float,
        latency_s: float,
        on_done: Callable[[Any], None] | None = None,
        arg: Any = None,
        *,
        weight: float | None = None,
        bound_bps: float | None = None,
    ) -> Flow:
        """Start a transfer now; ``on_done(arg)`` runs when its last byte arrives.

        ``route`` lists link indices (a link may appear more than once);
        ``latency_s`` is the route's latency; ``weight`` overrides the sharing
        policy's weight (rate is proportional to weight on a bottleneck);
        ``bound_bps`` caps the flow's rate (bytes/s, > 0; None: no cap).
        """
        if size_bytes < 0 or latency_s < 0:
            msg = f"size ({size_bytes!r} B) and latency ({latency_s!r} s) must be >= 0"
            raise ValueError(msg)
        if bound_bps is not None and not bound_bps > 0:
            msg = f"rate bound must be > 0 bytes/s (got {bound_bps!r})"
            raise ValueError(msg)
        key = route if type(route) is tuple else tuple(route)
        rid = self._route_ids.get(key)
        if rid is None:
            rid = self._intern_route(key)
        coefs = self._route_coefs[rid]
        if weight is None:
            weight = 1.0 if self.sharing == "maxmin" or latency_s <= 0 else 1.0 / latency_s
        env = self.env
        cls = (rid, weight) if bound_bps is None else (rid, weight, float(bound_bps))
        flow = Flow(self._next_fid, coefs, cls, size_bytes, latency_s, weight, env.now, on_done, arg)
        self._next_fid += 1
        if latency_s > 0:
            heappush(env.queue, (env.now + latency_s, next(env.counter), self._activate, flow))
        else:
            self._activate(flow)
        return flow

    def _intern_route(self, key: tuple[int, ...]) -> int:
        """Number a new route and record which routes share a link with it (static adjacency)."""
        counts: dict[int, int] = {}
        for link in key:
            counts[link] = counts.get(link, 0) + 1
        rid = self._route_ids[key] = len(self._route_coefs)
        self._route_coefs.append(tuple(counts.items()))
        links = set(counts)
        self._route_links.append(links)
        self._route_adj.append([rid])
        self._route_adj_pos.append({rid: 0})
        self._route_classes.append({})
        for other in range(rid):
            if links & self._route_links[other]:
                self._route_adj_pos[rid][other] = len(self._route_adj[rid])
                self._route_adj[rid].append(other)
                self._route_adj_pos[other][rid] = len(self._route_adj[other])
                self._route_adj[other].append(rid)
        return rid

    def rate_bps(self, flow: Flow) -> float:
        """Current rate of ``flow`` (0 while its latency elapses or after it ended)."""
        return flow.rate_bps if flow.fid in self.active else 0.0

    # -------------------------------------------------------------- internals
    def _activate(self, flow: Flow) -> None:
        now = self.env.now
        flow.last_s = now
        if not flow.coefs or flow.size_bytes <= 0:
            # Nothing to share: an empty route is infinitely fast.
            flow.remaining_bytes = 0.0
            flow.end_s = now
            self.completed += 1
            if flow.on_done is not None:
                flow.on_done(flow.arg)
            return
        self.active[flow.fid] = flow
        cls = flow.cls
        members = self._class_flows.get(cls)
        if members is None:
            members = self._class_flows[cls] = {}
            self._route_classes[cls[0]][cls] = None
            self._active_routes[cls[0]] = None
        members[flow.fid] = flow
        nflows = self._link_nflows
        size = flow.size_bytes
        for link, count in flow.coefs:
            if not nflows[link]:
                self._link_since[link] = now
            nflows[link] += 1
            self.link_bytes[link] += size * count
        self._reallocate((cls,), flow)

    def _complete(self, token: tuple[Flow, int]) -> None:
        flow, version = token
        if version != flow.version or flow.fid not in self.active:
            return  # stale event: the flow's rate changed since
        now = self.env.now
        del self.active[flow.fid]
        flow.remaining_bytes = 0.0
        flow.end_s = now
        cls = flow.cls
        members = self._class_flows[cls]
        del members[flow.fid]
        route_classes = self._route_classes
        if not members:
            del self._class_flows[cls]
            self._class_rate.pop(cls, None)
            del route_classes[cls[0]][cls]
            if not route_classes[cls[0]]:
                del self._active_routes[cls[0]]
        nflows = self._link_nflows
        for link, _ in flow.coefs:
            nflows[link] -= 1
            if not nflows[link]:
                self.link_busy_s[link] += now - self._link_since[link]
        # NOTE: the active classes of the adjacent routes, gathered in C (same order).
        seeds = list(chain.from_iterable(map(route_classes.__getitem__, self._route_adj[cls[0]])))
        self.completed += 1
        if seeds:
            self._reallocate(seeds, None)
        if flow.on_done is not None:
            flow.on_done(flow.arg)

    def _reallocate(self, seeds: Iterable[SharingClass], new_flow: Flow | None) -> None:
        """Recompute rates over the component of classes reachable from ``seeds`` (memoised)."""
        self.reallocations += 1
        route_classes = self._route_classes
        class_flows = self._class_flows
        # 1. The connected component of classes touched by the change (walked
        # route by route: routes are adjacent when they share a link).
        comp: dict[SharingClass, None] = dict.fromkeys(seeds)
        seen_routes: set[int] = set()
        stack = [c[0] for c in comp]
        active = self._active_routes
        adj_pos = self._route_adj_pos
        while stack:
            rid = stack.pop()
            if rid in seen_routes:
                continue
            seen_routes.add(rid)
            comp.update(route_classes[rid])  # NOTE: same insertion order as a loop, in C
            # Active unseen neighbours, pushed in adjacency-list order.
            pos = adj_pos[rid]
            nxt = [(pos[r2], r2) for r2 in active if r2 in pos and r2 not in seen_routes]
            if nxt:
                if len(nxt) > 1:
                    nxt.sort()
                stack.extend([r2 for _, r2 in nxt])
        # NOTE: a frozenset is a cheaper memo key than a sorted tuple and names the
        # same configuration; the solver still sees the classes in sorted order,
        # so its floating-point sums are the same as before.
        key = frozenset(zip(comp, map(len, map(class_flows.__getitem__, comp))))
        rates = self._cache.get(key)
        if rates is None:
            rates = self._solve(tuple(sorted(key)))
            if len(self._cache) >= self._CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = rates
        else:
            self.cache_hits += 1
        # 2. Reschedule the flows whose rate changed.
        env = self.env
        now = env.now
        queue = env.queue
        counter = env.counter
        complete = self._complete
        class_rate = self._class_rate
        for cls in comp:
            rate = rates[cls]
            if class_rate.get(cls) == rate:
                continue
            class_rate[cls] = rate
            for f in class_flows[cls].values():
                old = f.rate_bps
                if old > 0.0:
                    rem = f.remaining_bytes - old * (now - f.last_s)
                    f.remaining_bytes = rem if rem > 0.0 else 0.0
                f.last_s = now
                f.rate_bps = rate
                f.version += 1
                if rate > 0.0:
                    heappush(queue, (now + f.remaining_bytes / rate, next(counter), complete, (f, f.version)))
        if new_flow is not None and new_flow.version == 0:
            rate = rates[new_flow.cls]
            new_flow.rate_bps = rate
            new_flow.version = 1
            if rate > 0.0:
                heappush(queue, (now + new_flow.remaining_bytes / rate, next(counter), complete, (new_flow, 1)))

    def _solve(self, key: tuple[tuple[SharingClass, int], ...]) -> dict[SharingClass, float]:
        """Progressive filling (weighted max-min, per-link coefficients, rate bounds) for ``key`` = ((class, flows), ...)."""
        cap = self.capacity_bps
        route_coefs = self._route_coefs
        remaining: dict[int, float] = {}
        usage: dict[int, float] = {}
        unfixed_on: dict[int, int] = {}
        members: dict[int, list[tuple[SharingClass, int]]] = {}
        for cls, n in key:
            w = cls[1]
            for link, count in route_coefs[cls[0]]:
                if link not in remaining:
                    remaining[link] = cap[link]
                    usage[link] = 0.0
                    unfixed_on[link] = 0
                    members[link] = []
                usage[link] += n * count * w
                unfixed_on[link] += 1
                members[link].append((cls, n))
        rates: dict[SharingClass, float] = {}
        # NOTE: bounded classes, by the fill level (rate / weight) at which they reach their bound;
        # without any (the simulator's flows) the loop below is the plain progressive filling.
        bounded = sorted((cls[2] / cls[1], cls, n) for cls, n in key if len(cls) > 2)
        nb = 0
        while usage:
            share = float("inf")
            for link, u in usage.items():
                v = remaining[link] / u
                if v < share:
                    share = v
            if nb < len(bounded):
                while nb < len(bounded) and bounded[nb][1] in rates:
                    nb += 1
                if nb < len(bounded) and bounded[nb][0] <= share:
                    # A bound comes first: those classes run at their bound, the rest keep filling.
                    level = bounded[nb][0]
                    while nb < len(bounded) and bounded[nb][0] <= level:
                        _, cls, n = bounded[nb]
                        nb += 1
                        if cls in rates:
                            continue
                        rate = cls[2]
                        rates[cls] = rate
                        w = cls[1]
                        for l2, count in route_coefs[cls[0]]:
                            if l2 in usage:
                                r = remaining[l2] - n * count * rate
                                remaining[l2] = r if r > 0.0 else 0.0
                                left = unfixed_on[l2] - 1
                                unfixed_on[l2] = left
                                if left == 0:
                                    del usage[l2]
                                else:
                                    usage[l2] -= n * count * w
                    continue
            limit = share * (1.0 + _TIE_REL)
            saturated = [link for link, u in usage.items() if remaining[link] / u <= limit]
            for link in saturated:
                for cls, n in members[link]:
                    if cls in rates:
                        continue
                    w = cls[1]
                    rate = share * w
                    rates[cls] = rate
                    for l2, count in route_coefs[cls[0]]:
                        if l2 in usage:
                            r = remaining[l2] - n * count * rate
                            remaining[l2] = r if r > 0.0 else 0.0
                            left = unfixed_on[l2] - 1
                            unfixed_on[l2] = left
                            if left == 0:
                                del usage[l2]
                            else:
                                usage[l2] -= n * count * w
                usage.pop(link, None)
        return rates
