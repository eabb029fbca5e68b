"""The event path of ``event_replay`` compiled: the same engine, network and replay, operation for operation.

``event_replay._event_path`` replays a graph on the simulator's event engine
(``nodecast.engine.events``) and fluid network (``nodecast.engine.network``,
max-min sharing checked against SimGrid). Per copy that is some fifteen
Python calls (start a flow, activate it, re-allocate the rates of the links it
crosses, complete it, hand its end to the compiled propagation); the
interpreter's overhead per call is the replay's cost (docs/simulate-speed.md).

A replay needs less than the general network: one sharing policy (pure
max-min, every weight 1), every flow with a rate bound (its rate alone), a
few routes fixed in advance (those of the graph's copies), no link
statistics. ``run`` is that subset of the engine, the network and the replay
of ``event_replay`` written over numpy arrays and compiled with numba (this
module imports numba: import it only where the event path runs). It keeps
every observable order of the Python path, so that the schedules are bitwise
identical:

* events pop by (time, sequence number), the numbers given in the order of
  ``Environment``'s counter (a flow's activation, its completion after each
  rate change, an op's arrival at its unit, a unit's release);
* routes are numbered in the order the network first sees them, and each
  route's neighbours (routes sharing a link) listed in that order, as
  ``FluidNetwork._intern_route`` does;
* a sharing class is (route, bound); the active classes of a route and the
  active routes are kept in insertion order; a re-allocation walks the
  component of classes from its seeds as ``FluidNetwork._reallocate`` does
  (depth first, neighbours pushed in adjacency order) and reschedules the
  classes in that order;
* ``solve`` is ``FluidNetwork._solve`` for bounded weight-1 classes: the same
  progressive filling, the same floating-point operations in the same order
  (classes sorted by (route, bound), links in order of first appearance,
  bounds reached by increasing bound);
* the replay's recursion (an op's start released to the ops that wait for
  it, which may start flows) runs depth first in the same order.

The memoisation of ``FluidNetwork`` (solutions per configuration) is left
out: it never changes a result. A fixed-size event heap makes ``run`` return
None when it would overflow; ``event_replay`` then runs the Python path.

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

_TIE_REL = 1e-12  # nodecast.engine.network._TIE_REL: links within this relative share saturate together
#: Size of the event heap: per event op, and at least (events pending at once; see ``run``).
HEAP_PER_EVENT_OP, HEAP_MIN = 4, 1024
_KEY = nbt.UniTuple(nbt.float64, 2)
# event kinds
_ACTIVATE, _COMPLETE, _ARRIVE, _UNIT_FREE = 0, 1, 2, 3
# rows of the per-class int64 table CI
C_RID, C_COUNT, C_HEAD, C_TAIL, RC_NEXT, RC_PREV, C_COMP, C_MARK = range(8)
# rows of the per-class float table CF, bool-as-int8 table CB
C_BOUND, C_RATE, C_VAL = range(3)
C_HAS_RATE, C_DONE = range(2)
# rows of the per-flow int32 table FI (flow, class and route numbers, flags: all below the op count, which the
# replay's int32 op indices bound), float table FF; a flow's version (rate changes, not bounded by any size) is int64
M_NEXT, M_PREV, F_CLS, F_RID, F_ACTIVE, F_LIVE = range(6)
F_REM, F_RATE, F_LAST = range(3)
# bits of the per-op flags: an event op; an op with an out-edge that counts from its start
EVENT, START_OUT = 1, 2
# rows of the per-route int64 table RI
I_OF, I_ROUTE, ADJ_LEN, R_HEAD, R_TAIL, AR_NEXT, AR_PREV, AR_IN, R_SEEN = range(9)
# meta: next route number, next class, solve mark, walk mark, active routes head, tail, heap size, seq, overflow
MT_ROUTES, MT_CLASSES, MT_SOLVE, MT_WALK, MT_AR_HEAD, MT_AR_TAIL, MT_HEAP, MT_SEQ, MT_OVERFLOW = range(9)


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


# -- the heap of (time, seq, kind, a, b) ----------------------------------------------------------------------

@njit(cache=True)
def _push(ht, hi, meta, t, kind, a, b):  # pragma: no cover - compiled
    size = meta[MT_HEAP]
    if size >= ht.shape[0]:
        meta[MT_OVERFLOW] = 1  # the caller falls back to the Python path
        return
    seq = meta[MT_SEQ]
    meta[MT_SEQ] = seq + 1
    meta[MT_HEAP] = size + 1
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if ht[p] < t or (ht[p] == t and hi[p, 0] < seq):
            break
        ht[i] = ht[p]
        hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = hi[p, 0], hi[p, 1], hi[p, 2], hi[p, 3]
        i = p
    ht[i] = t
    hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = seq, kind, a, b


@njit(cache=True)
def _pop(ht, hi, meta):  # pragma: no cover - compiled
    t0, k0, a0, b0 = ht[0], hi[0, 1], hi[0, 2], hi[0, 3]
    size = meta[MT_HEAP] - 1
    meta[MT_HEAP] = size
    if size > 0:
        t = ht[size]
        s, k, a, b = hi[size, 0], hi[size, 1], hi[size, 2], hi[size, 3]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hi[c + 1, 0] < hi[c, 0])):
                c += 1
            if t < ht[c] or (t == ht[c] and s < hi[c, 0]):
                break
            ht[i] = ht[c]
            hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = hi[c, 0], hi[c, 1], hi[c, 2], hi[c, 3]
            i = c
        ht[i] = t
        hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = s, k, a, b
    return t0, k0, a0, b0


# -- the network (FluidNetwork for bounded max-min flows) ---------------------------------------------------

@njit(cache=True)
def _intern(RI, adj, pos, canon, coef_ptr, coef_link, meta, r):  # pragma: no cover - compiled
    """The network's number of CopyLinks route ``r`` (numbered on first use, neighbours recorded)."""
    c = canon[r]
    if RI[I_OF, c] >= 0:
        return RI[I_OF, c]
    k = meta[MT_ROUTES]
    meta[MT_ROUTES] = k + 1
    RI[I_OF, c] = k
    RI[I_ROUTE, k] = c
    adj[k, 0] = k
    RI[ADJ_LEN, k] = 1
    pos[k, k] = 0
    for other in range(k):
        oc = RI[I_ROUTE, other]
        share = False
        for x in range(coef_ptr[c], coef_ptr[c + 1]):
            for y in range(coef_ptr[oc], coef_ptr[oc + 1]):
                if coef_link[x] == coef_link[y]:
                    share = True
        if share:
            pos[k, other] = RI[ADJ_LEN, k]
            adj[k, RI[ADJ_LEN, k]] = other
            RI[ADJ_LEN, k] += 1
            pos[other, k] = RI[ADJ_LEN, other]
            adj[other, RI[ADJ_LEN, other]] = k
            RI[ADJ_LEN, other] += 1
    return k


@njit(cache=True)
def _fix(CI, CF, RI, coef_ptr, coef_link, coef_cnt, LF, LI, cl, rate, alive):  # pragma: no cover - compiled
    """A class's rate is set: take it off the links it crosses (FluidNetwork._solve's inner loop)."""
    n = CI[C_COUNT, cl]
    rc = RI[I_ROUTE, CI[C_RID, cl]]
    for x in range(coef_ptr[rc], coef_ptr[rc + 1]):
        l2 = coef_link[x]
        if LI[1, l2]:
            r = LF[0, l2] - (n * coef_cnt[x]) * rate
            LF[0, l2] = r if r > 0.0 else 0.0
            LI[0, l2] -= 1
            if LI[0, l2] == 0:
                LI[1, l2] = 0
                alive -= 1
            else:
                LF[1, l2] -= (n * coef_cnt[x]) * 1.0
    return alive


@njit(cache=True)
def _solve(CI, CF, CB, RI, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, meta, ncomp):  # pragma: no cover
    """FluidNetwork._solve for the classes ``CI[C_COMP, :ncomp]`` (bounded, weight 1): rates into ``CF[C_VAL]``.

    LF rows: remaining, usage per link; LI rows: unfixed classes, alive, mark, link order.
    """
    order = buf[:ncomp]
    order[:] = CI[C_COMP, :ncomp]
    for i in range(1, ncomp):  # by (route, bound), as sorted() sorts ((rid, 1.0, bound), n): a few classes
        x = order[i]
        j = i - 1
        while j >= 0 and (CI[C_RID, order[j]] > CI[C_RID, x] or (CI[C_RID, order[j]] == CI[C_RID, x]
                                                                   and CF[C_BOUND, order[j]] > CF[C_BOUND, x])):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = x
    meta[MT_SOLVE] += 1
    mark = meta[MT_SOLVE]
    nl = 0
    for i in range(ncomp):
        cl = order[i]
        n = CI[C_COUNT, cl]
        rc = RI[I_ROUTE, CI[C_RID, cl]]
        for x in range(coef_ptr[rc], coef_ptr[rc + 1]):
            link = coef_link[x]
            if LI[2, link] != mark:
                LI[2, link] = mark
                LI[3, nl] = link
                nl += 1
                LF[0, link] = cap[link]
                LF[1, link] = 0.0
                LI[0, link] = 0
                LI[1, link] = 1
            LF[1, link] += (n * coef_cnt[x]) * 1.0
            LI[0, link] += 1
        CB[C_DONE, cl] = 0
    border = buf[ncomp:2 * ncomp]  # by (bound / 1.0, class)
    border[:] = order
    for i in range(1, ncomp):
        x = border[i]
        j = i - 1
        while j >= 0 and (CF[C_BOUND, border[j]] > CF[C_BOUND, x] or (CF[C_BOUND, border[j]] == CF[C_BOUND, x]
                                                                       and CI[C_RID, border[j]] > CI[C_RID, x])):
            border[j + 1] = border[j]
            j -= 1
        border[j + 1] = x
    sat = buf[2 * ncomp:]
    nb = 0
    alive = nl
    while alive > 0:
        share = np.inf
        for i in range(nl):
            link = LI[3, i]
            if LI[1, link]:
                v = LF[0, link] / LF[1, link]
                if v < share:
                    share = v
        while nb < ncomp and CB[C_DONE, border[nb]]:
            nb += 1
        if nb < ncomp and CF[C_BOUND, border[nb]] / 1.0 <= share:
            # bounds come first: those classes run at their bound, the rest keep filling
            level = CF[C_BOUND, border[nb]] / 1.0
            while nb < ncomp and CF[C_BOUND, border[nb]] / 1.0 <= level:
                cl = border[nb]
                nb += 1
                if CB[C_DONE, cl]:
                    continue
                rate = CF[C_BOUND, cl]
                CF[C_VAL, cl] = rate
                CB[C_DONE, cl] = 1
                alive = _fix(CI, CF, RI, coef_ptr, coef_link, coef_cnt, LF, LI, cl, rate, alive)
            continue
        limit = share * (1.0 + _TIE_REL)
        nsat = 0
        for i in range(nl):
            link = LI[3, i]
            if LI[1, link] and LF[0, link] / LF[1, link] <= limit:
                sat[nsat] = link
                nsat += 1
        for s in range(nsat):
            link = sat[s]
            for i in range(ncomp):  # the classes crossing the link, in sorted order
                cl = order[i]
                if CB[C_DONE, cl]:
                    continue
                rc = RI[I_ROUTE, CI[C_RID, cl]]
                crosses = False
                for x in range(coef_ptr[rc], coef_ptr[rc + 1]):
                    if coef_link[x] == link:
                        crosses = True
                if not crosses:
                    continue
                rate = share * 1.0
                CF[C_VAL, cl] = rate
                CB[C_DONE, cl] = 1
                alive = _fix(CI, CF, RI, coef_ptr, coef_link, coef_cnt, LF, LI, cl, rate, alive)
            if LI[1, link]:
                LI[1, link] = 0
                alive -= 1


@njit(cache=True)
def _reallocate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, stack,
                ht, hi, meta, now, seeds, nseeds, new_flow):  # pragma: no cover - compiled
    """FluidNetwork._reallocate: the component of the seeds' classes, its rates, its flows rescheduled."""
    meta[MT_WALK] += 1
    mark = meta[MT_WALK]
    ncomp = 0
    for i in range(nseeds):
        cl = seeds[i]
        if CI[C_MARK, cl] != mark:
            CI[C_MARK, cl] = mark
            CI[C_COMP, ncomp] = cl
            ncomp += 1
    top = 0
    for i in range(ncomp):
        stack[top] = CI[C_RID, CI[C_COMP, i]]
        top += 1
    while top > 0:
        top -= 1
        rid = stack[top]
        if RI[R_SEEN, rid] == mark:
            continue
        RI[R_SEEN, rid] = mark
        cl = RI[R_HEAD, rid]
        while cl >= 0:
            if CI[C_MARK, cl] != mark:
                CI[C_MARK, cl] = mark
                CI[C_COMP, ncomp] = cl
                ncomp += 1
            cl = CI[RC_NEXT, cl]
        # active unseen neighbours (active routes in activation order), pushed in adjacency-list order
        first = top
        r2 = meta[MT_AR_HEAD]
        while r2 >= 0:
            if pos[rid, r2] >= 0 and RI[R_SEEN, r2] != mark:
                j = top
                while j > first and pos[rid, stack[j - 1]] > pos[rid, r2]:
                    stack[j] = stack[j - 1]
                    j -= 1
                stack[j] = r2
                top += 1
            r2 = RI[AR_NEXT, r2]
    _solve(CI, CF, CB, RI, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, meta, ncomp)
    for i in range(ncomp):
        cl = CI[C_COMP, i]
        rate = CF[C_VAL, cl]
        if CB[C_HAS_RATE, cl] and CF[C_RATE, cl] == rate:
            continue
        CF[C_RATE, cl] = rate
        CB[C_HAS_RATE, cl] = 1
        f = CI[C_HEAD, cl]
        while f >= 0:
            old = FF[F_RATE, f]
            if old > 0.0:
                rem = FF[F_REM, f] - old * (now - FF[F_LAST, f])
                FF[F_REM, f] = rem if rem > 0.0 else 0.0
            FF[F_LAST, f] = now
            FF[F_RATE, f] = rate
            FV[f] += 1
            if rate > 0.0:
                _push(ht, hi, meta, now + FF[F_REM, f] / rate, _COMPLETE, f, FV[f])
            f = FI[M_NEXT, f]
    if new_flow >= 0 and FV[new_flow] == 0:
        rate = CF[C_VAL, FI[F_CLS, new_flow]]
        FF[F_RATE, new_flow] = rate
        FV[new_flow] = 1
        if rate > 0.0:
            _push(ht, hi, meta, now + FF[F_REM, new_flow] / rate, _COMPLETE, new_flow, 1)


@njit(cache=True)
def _activate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, stack,
              seeds, ht, hi, meta, classes, now, w, bound):  # pragma: no cover - compiled
    """FluidNetwork._activate of flow ``w`` bounded by ``bound`` (bytes/s; its class made, and listed last on its
    route, when new)."""
    key = (float(FI[F_RID, w]), bound)
    if key in classes:
        cl = classes[key]
    else:
        cl = meta[MT_CLASSES]
        if cl >= CI.shape[1]:  # never: ``run`` sizes the classes by the distinct (route, bound) of the flows
            meta[MT_OVERFLOW] = 1
            return
        meta[MT_CLASSES] = cl + 1
        classes[key] = cl
        CI[C_RID, cl] = FI[F_RID, w]
        CF[C_BOUND, cl] = bound
        CI[C_HEAD, cl] = -1
        CI[C_TAIL, cl] = -1
        CI[C_COUNT, cl] = 0
    FF[F_LAST, w] = now
    FI[F_ACTIVE, w] = 1
    FI[F_CLS, w] = cl
    if CI[C_COUNT, cl] == 0:
        CB[C_HAS_RATE, cl] = 0
        rid = CI[C_RID, cl]
        CI[RC_NEXT, cl] = -1
        CI[RC_PREV, cl] = RI[R_TAIL, rid]
        if RI[R_TAIL, rid] >= 0:
            CI[RC_NEXT, RI[R_TAIL, rid]] = cl
        else:
            RI[R_HEAD, rid] = cl
        RI[R_TAIL, rid] = cl
        if not RI[AR_IN, rid]:
            RI[AR_IN, rid] = 1
            RI[AR_NEXT, rid] = -1
            RI[AR_PREV, rid] = meta[MT_AR_TAIL]
            if meta[MT_AR_TAIL] >= 0:
                RI[AR_NEXT, meta[MT_AR_TAIL]] = rid
            else:
                meta[MT_AR_HEAD] = rid
            meta[MT_AR_TAIL] = rid
    FI[M_NEXT, w] = -1
    FI[M_PREV, w] = CI[C_TAIL, cl]
    if CI[C_TAIL, cl] >= 0:
        FI[M_NEXT, CI[C_TAIL, cl]] = w
    else:
        CI[C_HEAD, cl] = w
    CI[C_TAIL, cl] = w
    CI[C_COUNT, cl] += 1
    seeds[0] = cl
    _reallocate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, stack,
                ht, hi, meta, now, seeds, 1, w)


@njit(cache=True)
def _complete(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, stack,
              seeds, ht, hi, meta, now, w, version):  # pragma: no cover - compiled
    """FluidNetwork._complete: False for a stale event; else the flow leaves and the others re-share."""
    if version != FV[w] or not FI[F_ACTIVE, w]:
        return False
    FI[F_ACTIVE, w] = 0
    FF[F_REM, w] = 0.0
    cl = FI[F_CLS, w]
    if FI[M_PREV, w] >= 0:
        FI[M_NEXT, FI[M_PREV, w]] = FI[M_NEXT, w]
    else:
        CI[C_HEAD, cl] = FI[M_NEXT, w]
    if FI[M_NEXT, w] >= 0:
        FI[M_PREV, FI[M_NEXT, w]] = FI[M_PREV, w]
    else:
        CI[C_TAIL, cl] = FI[M_PREV, w]
    CI[C_COUNT, cl] -= 1
    rid = CI[C_RID, cl]
    if CI[C_COUNT, cl] == 0:
        CB[C_HAS_RATE, cl] = 0
        if CI[RC_PREV, cl] >= 0:
            CI[RC_NEXT, CI[RC_PREV, cl]] = CI[RC_NEXT, cl]
        else:
            RI[R_HEAD, rid] = CI[RC_NEXT, cl]
        if CI[RC_NEXT, cl] >= 0:
            CI[RC_PREV, CI[RC_NEXT, cl]] = CI[RC_PREV, cl]
        else:
            RI[R_TAIL, rid] = CI[RC_PREV, cl]
        if RI[R_HEAD, rid] < 0:
            RI[AR_IN, rid] = 0
            if RI[AR_PREV, rid] >= 0:
                RI[AR_NEXT, RI[AR_PREV, rid]] = RI[AR_NEXT, rid]
            else:
                meta[MT_AR_HEAD] = RI[AR_NEXT, rid]
            if RI[AR_NEXT, rid] >= 0:
                RI[AR_PREV, RI[AR_NEXT, rid]] = RI[AR_PREV, rid]
            else:
                meta[MT_AR_TAIL] = RI[AR_PREV, rid]
    ns = 0
    for i in range(RI[ADJ_LEN, rid]):  # the classes of the adjacent routes, route by route
        c = RI[R_HEAD, adj[rid, i]]
        while c >= 0:
            seeds[ns] = c
            ns += 1
            c = CI[RC_NEXT, c]
    if ns:
        _reallocate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf,
                    stack, ht, hi, meta, now, seeds, ns, -1)
    return True


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
    classes = Dict.empty(key_type=_KEY, value_type=nbt.int64)
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
                    _push(ht, hi, meta, t if t > now else now, _ARRIVE, w, 0)
            elif kind == _TRANSFER_WAITED or kind == _TRANSFER:
                t = start[w]
                lat = (t - now + lat_of[w] if t > now else lat_of[w]) if kind == _TRANSFER_WAITED else lat_of[w]
                f = np.searchsorted(flow_op, w)
                FI[F_LIVE, f] = 1
                FI[F_RID, f] = _intern(RI, adj, pos, canon, coef_ptr, coef_link, meta, route_of[w])
                FF[F_REM, f] = float(nbytes[w])
                FF[F_RATE, f] = 0.0
                FV[f] = 0
                if lat > 0:
                    _push(ht, hi, meta, now + lat, _ACTIVATE, f, 0)
                else:
                    _activate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI,
                              buf, rstack, seeds, ht, hi, meta, classes, now, f, rate_of[w])
            elif kind == _UNIT_PUSH:
                if dur[w] > 0:
                    te = end[w]
                    _push(ht, hi, meta, te if te > now else now, _UNIT_FREE, unit_of[w], 0)
            else:  # _SPREAD_END
                top = _spread(tasks, top, seed1, w, 1, out_ptr, out_code, out_eid, lag, remaining, start, end, dur,
                              flags, stack, emit)
        if meta[MT_OVERFLOW] or meta[MT_HEAP] == 0:
            break
        now, kind, a, b = _pop(ht, hi, meta)
        processed += 1
        if kind == _ACTIVATE:
            _activate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf,
                      rstack, seeds, ht, hi, meta, classes, now, a, rate_of[flow_op[a]])
        elif kind == _COMPLETE:
            if _complete(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf,
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
        elif kind == _ARRIVE:
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
        else:  # _UNIT_FREE
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
