"""The fluid network's compiled port: ``FluidNetwork`` for bounded max-min flows, over numpy tables.

``nodecast.engine.network.FluidNetwork`` is the reference (max-min sharing,
checked against SimGrid). The compiled event loop of the replay
(``nodecast.engine.compiled``) needs less than the general network: one
sharing policy (pure max-min, every weight 1), every flow with a rate bound
(its rate alone), a few routes fixed in advance (those of the graph's
copies), no link statistics. This module is that subset, written over numpy
arrays and compiled with numba (it imports numba: import it only where the
event path runs), keeping every observable order of the Python network so
that the replay's schedules are bitwise identical:

* events pop by (time, sequence number), the numbers given in the order of
  ``Environment``'s counter (``push``/``pop``: the heap the replay loop
  shares, for the network's activations and completions and the replay's
  arrivals and unit releases);
* routes are numbered in the order the network first sees them, and each
  route's neighbours (routes sharing a link) listed in that order, as
  ``FluidNetwork._intern_route`` does (``intern_route``);
* a sharing class is (route, bound); the active classes of a route and the
  active routes are kept in insertion order; a re-allocation walks the
  component of classes from its seeds as ``FluidNetwork._reallocate`` does
  (depth first, neighbours pushed in adjacency order) and reschedules the
  classes in that order;
* ``_solve`` is ``FluidNetwork._solve`` for bounded weight-1 classes: the same
  progressive filling, the same floating-point operations in the same order
  (classes sorted by (route, bound), links in order of first appearance,
  bounds reached by increasing bound).

The memoisation of ``FluidNetwork`` (solutions per configuration) is left
out: it never changes a result. The tables (their rows named below) are
allocated by ``compiled.run``, which sizes them.

numba caches each module's compiled functions by that module's file: after
editing this module, clear the cache of ``compiled`` too (``NUMBA_CACHE_DIR``
or the ``__pycache__`` beside it), whose loop links these functions in.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba import types as nbt

_TIE_REL = 1e-12  # nodecast.engine.network._TIE_REL: links within this relative share saturate together
#: Key of a sharing class in the loop's typed dict: (network route number, rate bound in bytes/s).
CLASS_KEY = nbt.UniTuple(nbt.float64, 2)
# kinds of the heap's events: the network's (a flow's activation, completion), the replay's (an op's arrival at
# its unit, a unit's release)
ACTIVATE, COMPLETE, ARRIVE, UNIT_FREE = 0, 1, 2, 3
# rows of the per-class int64 table CI
C_RID, C_COUNT, C_HEAD, C_TAIL, RC_NEXT, RC_PREV, C_COMP, C_MARK = range(8)
# rows of the per-class float table CF, bool-as-int8 table CB
C_BOUND, C_RATE, C_VAL = range(3)
C_HAS_RATE, C_DONE = range(2)
# rows of the per-flow int32 table FI (flow, class and route numbers, flags: all below the op count, which the
# replay's int32 op indices bound), float table FF; a flow's version (rate changes, not bounded by any size) is int64
M_NEXT, M_PREV, F_CLS, F_RID, F_ACTIVE, F_LIVE = range(6)
F_REM, F_RATE, F_LAST = range(3)
# rows of the per-route int64 table RI
I_OF, I_ROUTE, ADJ_LEN, R_HEAD, R_TAIL, AR_NEXT, AR_PREV, AR_IN, R_SEEN = range(9)
# meta: next route number, next class, solve mark, walk mark, active routes head, tail, heap size, seq, overflow
MT_ROUTES, MT_CLASSES, MT_SOLVE, MT_WALK, MT_AR_HEAD, MT_AR_TAIL, MT_HEAP, MT_SEQ, MT_OVERFLOW = range(9)


# -- the heap of (time, seq, kind, a, b) ----------------------------------------------------------------------

@njit(cache=True)
def push(ht, hi, meta, t, kind, a, b):  # pragma: no cover - compiled
    """Put event (``t`` seconds, ``kind``, ``a``, ``b``) on the heap with the next sequence number (``meta[MT_SEQ]``);
    a full heap sets ``meta[MT_OVERFLOW]`` instead."""
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
def pop(ht, hi, meta):  # pragma: no cover - compiled
    """Take the earliest event, by (time, sequence number): (time in seconds, kind, a, b)."""
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
def intern_route(RI, adj, pos, canon, coef_ptr, coef_link, meta, r):  # pragma: no cover - compiled
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
                push(ht, hi, meta, now + FF[F_REM, f] / rate, COMPLETE, f, FV[f])
            f = FI[M_NEXT, f]
    if new_flow >= 0 and FV[new_flow] == 0:
        rate = CF[C_VAL, FI[F_CLS, new_flow]]
        FF[F_RATE, new_flow] = rate
        FV[new_flow] = 1
        if rate > 0.0:
            push(ht, hi, meta, now + FF[F_REM, new_flow] / rate, COMPLETE, new_flow, 1)


@njit(cache=True)
def activate(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, stack,
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
def complete(CI, CF, CB, FI, FV, FF, RI, adj, pos, canon, coef_ptr, coef_link, coef_cnt, cap, LF, LI, buf, stack,
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
