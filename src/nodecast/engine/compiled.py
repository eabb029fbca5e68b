"""The event path of ``event_replay`` compiled: the same engine, network and replay, operation for operation.

``event_replay._event_path`` replays a graph on the simulator's event engine
(``nodecast.engine.events``) and fluid network (``nodecast.engine.network``,
max-min sharing checked against SimGrid). Per copy that is some fifteen
Python calls (start a flow, activate it, re-allocate the rates of the links it
crosses, complete it, hand its end to the compiled propagation); the
interpreter's overhead per call is the replay's cost (docs/simulate-speed.md).

``run`` is that loop written over numpy arrays and compiled with numba (this
module imports numba: import it only where the event path runs): the
propagation of the single pass's recurrence (``propagate``), the replay's
handlers, and the network of ``nodecast.engine.network_compiled`` (the fluid
network's compiled port for bounded max-min flows, which keeps every
observable order of ``FluidNetwork``). The replay's recursion (an op's start
released to the ops that wait for it, which may start flows) runs depth first
in the Python path's order, so that the schedules are bitwise identical.

A fixed-size event heap makes ``run`` return None when it would overflow;
``event_replay`` then runs the Python path.

Memory (the replay holds every op's start, end and pending in-edge count
anyway): out-edges as int32 (destination with its anchor in the low bit, and
the in-edge's index, whose lag the graph already holds: 8 B per edge), one
int8 of flags per op, flow tables per network copy (not per op), sharing
classes per distinct (route, rate) of those copies, and work stacks sized by
what provably reaches them (see ``run``).
``tests/engine/test_compiled.py`` checks bitwise equality with the
Python path on random graphs, real traces and the link-sharing benchmark.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba import types as nbt
from numba.typed import Dict

from nodecast.engine.network_compiled import (
    ACTIVATE,
    ADJ_LEN,
    AR_IN,
    ARRIVE,
    C_COUNT,
    C_MARK,
    CLASS_KEY,
    COMPLETE,
    F_LIVE,
    F_RATE,
    F_REM,
    F_RID,
    M_NEXT,
    M_PREV,
    MT_HEAP,
    MT_OVERFLOW,
    R_SEEN,
    UNIT_FREE,
    activate,
    complete,
    intern_route,
    pop,
    push,
)

#: Size of the event heap: per event op, and at least (events pending at once; see ``run``).
HEAP_PER_EVENT_OP, HEAP_MIN = 4, 1024
# bits of the per-op flags: an event op; an op with an out-edge that counts from its start
EVENT, START_OUT = 1, 2


@njit(cache=True)
def propagate(seeds, nseeds, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack,
              emit):  # pragma: no cover - compiled
    """Time every op the seeds release (replay.py's recurrence) up to event ops; returns how many event ops became
    ready (in ``emit``). seeds: op * 4 + what is known (0 its start, 1 its end, 2 both); out-edges as ``out_edges``
    makes them, ``lag``: the graph's per in-edge lags (seconds)."""
    top = 0
    for i in range(nseeds):
        stack[top] = seeds[i]
        top += 1
    n_emit = 0
    while top > 0:
        top -= 1
        code = stack[top]
        v = code >> 2
        known = code & 3
        ts = start[v]
        te = end[v]
        for k in range(out_ptr[v], out_ptr[v + 1]):
            code = out_code[k]
            a = code & 1
            if known != 2 and a != known:
                continue
            t = (ts if a == 0 else te) + lag[out_eid[k]]
            w = code >> 1
            if t > start[w]:
                start[w] = t
            remaining[w] -= 1
            if remaining[w] == 0:
                if flags[w] & EVENT:
                    emit[n_emit] = w
                    n_emit += 1
                else:
                    end[w] = start[w] + dur[w]
                    stack[top] = w * 4 + 2
                    top += 1
    return n_emit


@njit(cache=True)
def _fill_out_edges(indptr, src, anchor, flags, out_ptr, out_code, out_eid):  # pragma: no cover - compiled
    n = out_ptr.shape[0] - 1
    for e in range(src.shape[0]):
        out_ptr[src[e] + 1] += 1
    for v in range(n):
        out_ptr[v + 1] += out_ptr[v]
    for v in range(n):  # edges in index order: stable within a source, as graph.order.csr_positions sorts them
        for e in range(indptr[v], indptr[v + 1]):
            u = src[e]
            k = out_ptr[u]
            out_ptr[u] = k + 1
            out_code[k] = v * 2 + anchor[e]
            out_eid[k] = e
            if anchor[e] == 0:
                flags[u] |= START_OUT
    for v in range(n, 0, -1):  # out_ptr[u] ran to u's end, which is u + 1's start
        out_ptr[v] = out_ptr[v - 1]
    out_ptr[0] = 0


def out_edges(indptr: np.ndarray, src: np.ndarray, anchor: np.ndarray,
              flags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Out-edges of a graph given by its in-edges (``OpGraph.indptr``/``src``/``anchor``): (out_ptr, out_code, out_eid).

    The out-edges of op ``u`` are ``out_ptr[u]:out_ptr[u + 1]``, in edge index order; ``out_code`` is destination * 2
    + anchor (0: the edge counts from ``u``'s start, 1: from its end), ``out_eid`` the edge's index in the graph (its
    lag is ``lag_s[out_eid]``). Sets START_OUT in ``flags`` (int8, per op) for ops with an out-edge from their start.
    int32 where the counts allow (op and edge indices below 2**31, destination * 2 + 1 too), else int64.
    """
    n, m = len(indptr) - 1, len(src)
    big = np.iinfo(np.int32).max
    idx = np.int32 if m < big else np.int64
    out_ptr = np.zeros(n + 1, idx)
    out_code = np.empty(m, np.int32 if 2 * n + 1 < big else np.int64)
    out_eid = np.empty(m, idx)
    _fill_out_edges(indptr, src, anchor, flags, out_ptr, out_code, out_eid)
    return out_ptr, out_code, out_eid


# -- the replay (event_replay._event_path) -----------------------------------------------------------------

# Tasks of the replay's recursion (release -> spread -> release ...), run last in, first out: a handler pushes
# what must come after a nested propagation first, then the ops that propagation made ready (in reverse, so
# that the first pops first), which is the Python path's depth-first order.
_ITEM, _TRANSFER_WAITED, _TRANSFER, _UNIT_PUSH, _SPREAD_END = range(5)


@njit(cache=True)
def _spread(tasks, top, seed1, w, known, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack,
            emit):  # pragma: no cover - compiled
    """event_replay's ``spread``: propagate from ``w``; the ops made ready become ITEM tasks (first on top)."""
    seed1[0] = w * 4 + known
    ready = propagate(seed1, 1, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack, emit)
    for i in range(ready - 1, -1, -1):
        tasks[top] = emit[i] * 8 + _ITEM
        top += 1
    return top


@njit(cache=True)
def _begin(tasks, top, seed1, w, route_of, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags,
           stack, emit):  # pragma: no cover - compiled
    """event_replay's ``begin``: a copy's start propagated, then its flow; a unit op's end set and propagated,
    then its unit's release put on the clock."""
    if route_of[w] >= 0:
        tasks[top] = w * 8 + _TRANSFER
        top += 1
        if flags[w] & START_OUT:
            top = _spread(tasks, top, seed1, w, 0, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags,
                          stack, emit)
    else:
        end[w] = start[w] + dur[w]
        tasks[top] = w * 8 + _UNIT_PUSH
        top += 1
        top = _spread(tasks, top, seed1, w, 2, out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags,
                      stack, emit)
    return top


@njit(cache=True)
def _free_unit(u, free, w_head, w_tail, w_next, start, now):  # pragma: no cover - compiled
    """unit_free's choice: the op that takes the unit (its start set: it waited), or -1 (the unit is free)."""
    w = w_head[u]
    if w >= 0:
        w_head[u] = w_next[w]
        if w_next[w] < 0:
            w_tail[u] = -1
        start[w] = now  # it waited for this unit
        return w
    free[u] += 1
    return -1


@njit(cache=True)
def _run(out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack, emit, first, tasks, unit_of,
         route_of, flow_op, lat_of, rate_of, nbytes, free, w_head, w_tail, w_next, CI, CF, CB, FI, FV, FF, RI, adj,
         pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, rstack, seeds, ht, hi,
         meta):  # pragma: no cover - compiled
    """The whole loop; returns the events processed (``meta[MT_OVERFLOW]`` set when the heap overflowed).

    Flows are numbered by their op's rank in ``flow_op`` (the network copies in op order): the heap's activations
    and completions carry that number, the tables FI/FV/FF are indexed by it."""
    classes = Dict.empty(key_type=CLASS_KEY, value_type=nbt.int64)
    seed1 = np.empty(1, np.int64)
    top = 0
    for i in range(first.shape[0] - 1, -1, -1):  # release(first)
        tasks[top] = first[i] * 8 + _ITEM
        top += 1
    now = 0.0
    processed = 0
    while True:
        while top > 0:
            top -= 1
            w = tasks[top] >> 3
            kind = tasks[top] & 7
            if kind == _ITEM:
                t = start[w]
                if unit_of[w] < 0:
                    # no unit to wait for: the flow starts now with its wait until ``t`` added to its latency
                    tasks[top] = w * 8 + _TRANSFER_WAITED
                    top += 1
                    if flags[w] & START_OUT:
                        top = _spread(tasks, top, seed1, w, 0, out_ptr, out_code, out_eid, lag, remaining, start, end,
                                      dur, flags, stack, emit)
                else:
                    push(ht, hi, meta, t if t > now else now, ARRIVE, w, 0)
            elif kind == _TRANSFER_WAITED or kind == _TRANSFER:
                t = start[w]
                lat = (t - now + lat_of[w] if t > now else lat_of[w]) if kind == _TRANSFER_WAITED else lat_of[w]
                f = np.searchsorted(flow_op, w)
                FI[F_LIVE, f] = 1
                FI[F_RID, f] = intern_route(RI, adj, pos, canon, coef_ptr, coef_link, meta, route_of[w])
                FF[F_REM, f] = float(nbytes[w])
                FF[F_RATE, f] = 0.0
                FV[f] = 0
                if lat > 0:
                    push(ht, hi, meta, now + lat, ACTIVATE, f, 0)
                else:
                    activate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI,
                              buf, rstack, seeds, ht, hi, meta, classes, now, f, rate_of[w])
            elif kind == _UNIT_PUSH:
                if dur[w] > 0:
                    te = end[w]
                    push(ht, hi, meta, te if te > now else now, UNIT_FREE, unit_of[w], 0)
            else:  # _SPREAD_END
                top = _spread(tasks, top, seed1, w, 1, out_ptr, out_code, out_eid, lag, remaining, start, end, dur,
                              flags, stack, emit)
        if meta[MT_OVERFLOW] or meta[MT_HEAP] == 0:
            break
        now, kind, a, b = pop(ht, hi, meta)
        processed += 1
        if kind == ACTIVATE:
            activate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf,
                      rstack, seeds, ht, hi, meta, classes, now, a, rate_of[flow_op[a]])
        elif kind == COMPLETE:
            if complete(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf,
                         rstack, seeds, ht, hi, meta, now, a, b):
                f = a
                w = flow_op[f]
                FI[F_LIVE, f] = 0
                # flow_done: a copy that kept its own rate all along ends exactly as in the single pass; its unit
                # freed (which may begin a waiting op), then its end propagated
                end[w] = start[w] + dur[w] if FV[f] == 1 and FF[F_RATE, f] == rate_of[w] else now
                tasks[top] = w * 8 + _SPREAD_END
                top += 1
                u = unit_of[w]
                if u >= 0:
                    w2 = _free_unit(u, free, w_head, w_tail, w_next, start, now)
                    if w2 >= 0:
                        top = _begin(tasks, top, seed1, w2, route_of, out_ptr, out_code, out_eid, lag, remaining,
                                     start, end, dur, flags, stack, emit)
        elif kind == ARRIVE:
            w = a
            u = unit_of[w]
            if dur[w] > 0:  # an op of no duration holds no unit
                if free[u] == 0:
                    w_next[w] = -1
                    if w_tail[u] >= 0:
                        w_next[w_tail[u]] = w
                    else:
                        w_head[u] = w
                    w_tail[u] = w
                    continue
                free[u] -= 1
            top = _begin(tasks, top, seed1, w, route_of, out_ptr, out_code, out_eid, lag, remaining, start, end, dur,
                         flags, stack, emit)
        else:  # UNIT_FREE
            w2 = _free_unit(a, free, w_head, w_tail, w_next, start, now)
            if w2 >= 0:
                top = _begin(tasks, top, seed1, w2, route_of, out_ptr, out_code, out_eid, lag, remaining, start, end,
                             dur, flags, stack, emit)
    return processed


def _class_keys(route_of: np.ndarray, canon: np.ndarray, rate_of: np.ndarray, flow_op: np.ndarray) -> int:
    """How many sharing classes the flows can make: distinct (network route, bound) among them (a NaN bound counts
    once per flow, as it never equals itself)."""
    if flow_op.size == 0:
        return 0
    route = canon[route_of[flow_op]]
    bound = rate_of[flow_op]
    order = np.lexsort((bound, route))
    route, bound = route[order], bound[order]
    return 1 + int(np.count_nonzero((route[1:] != route[:-1]) | (bound[1:] != bound[:-1])))


def run(out_ptr: np.ndarray, out_code: np.ndarray, out_eid: np.ndarray, lag: np.ndarray, remaining: np.ndarray,
        start: np.ndarray, end: np.ndarray, dur: np.ndarray, flags: np.ndarray, stack: np.ndarray, emit: np.ndarray,
        first: np.ndarray, unit_of: np.ndarray, unit_count: list[int], route_of: np.ndarray,
        routes: list[tuple[int, ...]], rate_of: np.ndarray, lat_of: np.ndarray, nbytes: np.ndarray,
        capacity_bps: np.ndarray) -> int | None:
    """Run the event loop over the state ``event_replay._event_path`` prepared (``start``/``end`` filled in place).

    ``out_ptr``/``out_code``/``out_eid``: ``out_edges``; ``lag``: the graph's lags (seconds); ``flags``: EVENT and
    START_OUT per op; ``unit_of`` (int32, -1: none), ``route_of`` (int32, -1: off the network): per op;
    ``rate_of``/``lat_of``/``nbytes``: per op (bytes/s, seconds, bytes). ``first``: the event ops the initial
    propagation made ready, in its order. Returns the events processed, or None when the event heap would overflow
    (``start``/``end``/``remaining`` are then unusable).
    """
    n_routes = len(routes)
    if any(not route for route in routes):
        return None  # an empty route completes at once in the network: not a replay's copy
    canon = np.arange(max(n_routes, 1), dtype=np.int64)  # identical tuples are one route of the network
    seen: dict[tuple[int, ...], int] = {}
    coef_ptr = np.zeros(n_routes + 1, np.int64)
    coef_link: list[int] = []
    coef_cnt: list[int] = []
    for r, route in enumerate(routes):
        canon[r] = seen.setdefault(tuple(route), r)
        counts: dict[int, int] = {}
        for x in route:
            counts[x] = counts.get(x, 0) + 1
        coef_link += list(counts)
        coef_cnt += list(counts.values())
        coef_ptr[r + 1] = len(coef_link)
    nr = max(n_routes, 1)
    n_links = max(len(capacity_bps), 1)
    flow_op = np.flatnonzero(route_of >= 0).astype(np.int32)  # sorted: an op's flow is its rank here
    nf = max(flow_op.size, 1)
    # a class is a (network route, bound) key, made once and kept: no more than the flows' distinct keys
    n_cls = _class_keys(route_of, canon, rate_of, flow_op) + 1
    CI = np.full((8, n_cls), -1, np.int64)
    CI[C_COUNT] = 0
    CI[C_MARK] = 0
    CF = np.zeros((3, n_cls))
    CB = np.zeros((2, n_cls), np.int8)
    FI = np.zeros((6, nf), np.int32)
    FI[M_NEXT] = -1
    FI[M_PREV] = -1
    FV = np.zeros(nf, np.int64)
    FF = np.zeros((3, nf))
    RI = np.full((9, nr), -1, np.int64)
    RI[ADJ_LEN] = 0
    RI[AR_IN] = 0
    RI[R_SEEN] = 0
    adj = np.zeros((nr, nr), np.int64)
    pos = np.full((nr, nr), -1, np.int64)
    LF = np.zeros((2, n_links))
    LI = np.zeros((4, n_links), np.int64)
    buf = np.zeros(2 * n_cls + n_links + 8, np.int64)
    rstack = np.zeros(nr * nr + nr + 8, np.int64)
    seeds = np.zeros(n_cls + 8, np.int64)
    n_event = int(np.count_nonzero(flags & EVENT))
    # pending events: arrivals and activations (one per event op at most), unit releases, and completions (one
    # per rate change still pending, stale ones included): 4 per event op is far above what a replay holds
    size = HEAP_PER_EVENT_OP * n_event + HEAP_MIN
    ht = np.empty(size)
    hi = np.empty((size, 4), np.int64)
    meta = np.array([0, 0, 0, 0, -1, -1, 0, 0, 0], np.int64)
    n_units = max(len(unit_count), 1)
    free = np.zeros(n_units, np.int64)
    free[:len(unit_count)] = unit_count
    # the recursion's tasks, each event op's at most once: its ITEM (when it becomes ready), one of TRANSFER(_WAITED)
    # or UNIT_PUSH (when it begins), a flow's SPREAD_END (when it completes): never more than 3 per event op pending
    tasks = np.empty(3 * n_event + 16, np.int64)
    # the queue of ops waiting for a unit is linked through the ops: only where an op can wait
    w_next = np.full(len(start) if (unit_of >= 0).any() else 1, -1, np.int32)
    processed = _run(out_ptr, out_code, out_eid, lag, remaining, start, end, dur, flags, stack, emit,
                     np.asarray(first, np.int64), tasks, unit_of, route_of, flow_op, np.asarray(lat_of, np.float64),
                     np.asarray(rate_of, np.float64), nbytes, free, np.full(n_units, -1, np.int64),
                     np.full(n_units, -1, np.int64), w_next, CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr,
                     np.array(coef_link, np.int64), np.array(coef_cnt, np.int64),
                     np.asarray(capacity_bps, np.float64), LF, LI, buf, rstack, seeds, ht, hi, meta)
    if meta[MT_OVERFLOW]:
        return None
    if FI[F_LIVE].any():
        msg = f"event replay stalled with {int(FI[F_LIVE].sum())} flow(s) not finished"
        raise RuntimeError(msg)
    return int(processed)
