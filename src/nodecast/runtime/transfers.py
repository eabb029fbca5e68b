"""Transfers between memory nodes: StarPU's stream rules, then the fluid network (section 6).

A transfer (``Hop``) costs ``transfer_queue_s`` (10 µs, Table 2), then obeys
StarPU 1.4's simulated CUDA streams: transfers between the same pair of nodes
are sequential, crossed GPU<->GPU transfers are sequential, GPU->GPU transfers
are sequential with transfers into either GPU (``stream_conflicts``). Then it
flows through the fluid network (``nodecast.engine.network``: max-min
bandwidth sharing over per-pair links and the shared PCI/Host links). When it
ends, the copy becomes valid on its destination (unless the data was written
meanwhile) and whoever waits for it goes on.
"""

from __future__ import annotations

import math
from heapq import heappush

from nodecast.engine.platform import RAM


class Hop:
    """One transfer between two memory nodes through the fluid network."""

    __slots__ = ("h", "src", "dst", "size", "version", "nwait", "wake", "done", "cont", "arg", "t_issue", "t_start", "flow", "seq")

    def __init__(self, h, src, dst, size, version, cont, arg, t_issue) -> None:
        self.h = h
        self.src = src
        self.dst = dst
        self.size = size
        self.version = version
        self.nwait = 0
        self.wake: list[Hop] = []
        self.done = False
        self.cont = cont
        self.arg = arg
        self.t_issue = t_issue
        self.t_start = math.nan
        self.flow = None


def stream_conflicts(nn: int) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """For each ordered pair, the pairs whose pending transfers a new transfer must wait for.

    StarPU 1.4's simulated CUDA streams (``transfers_are_sequential``): same
    pair; crossed GPU<->GPU; a GPU->GPU transfer and any transfer into its
    source or destination.
    """
    out = {}
    for s in range(nn):
        for d in range(nn):
            if s == d:
                continue
            new_gg = s != RAM and d != RAM
            lst = []
            for s2 in range(nn):
                for d2 in range(nn):
                    if s2 == d2:
                        continue
                    old_gg = s2 != RAM and d2 != RAM
                    seq = (s2 == s and d2 == d) or (new_gg and s == d2 and s2 == d)
                    seq = seq or (new_gg and (d2 == s or d2 == d))
                    seq = seq or (old_gg and (d == s2 or d == d2))
                    if seq:
                        lst.append((s2, d2))
            out[(s, d)] = lst
    return out


class Transfers:
    """The transfer part of ``Simulation`` (a mixin: the state it uses is set up by ``Simulation``)."""

    def _hop(self, h: int, src: int, dst: int, cont, arg) -> None:
        """Copy ``h`` from ``src`` to ``dst``: queue cost, stream rules, then the fluid network."""
        env = self.env
        hop = Hop(h, src, dst, self.size[h], self.version[h], cont, arg, env.now)
        hop.seq = self.hop_seq
        self.hop_seq += 1
        self.live_hops[hop.seq] = None
        self.pin[src][h] += 1
        q = self.opt.overheads.transfer_queue_s
        if q > 0:
            heappush(env.queue, (env.now + q, next(env.counter), self._hop_submit, hop))
        else:
            self._hop_submit(hop)

    def _hop_submit(self, hop: Hop) -> None:
        pair_last = self.pair_last
        for p in self.conflicts[(hop.src, hop.dst)]:
            last = pair_last.get(p)
            if last is not None and not last.done:
                last.wake.append(hop)
                hop.nwait += 1
        pair_last[(hop.src, hop.dst)] = hop
        if hop.nwait == 0:
            self._hop_start(hop)

    def _hop_start(self, hop: Hop) -> None:
        plat = self.platform
        hop.t_start = self.env.now
        self.hops_started += 1
        links = plat.route_links[hop.src][hop.dst]
        # the rate bound makes a lone copy take the link-time rule's time (nodecast.engine.links); None on StarPU's
        # measured platforms
        hop.flow = self.net.transfer(links, hop.size, plat.route_latency_s[hop.src][hop.dst], self._hop_done, hop,
                                     bound_bps=plat.copy_bound_bps(hop.src, hop.dst, hop.size))

    def _hop_done(self, hop: Hop) -> None:
        hop.done = True
        src, dst, h = hop.src, hop.dst, hop.h
        del self.live_hops[hop.seq]
        if self.sync_waiters:
            ready = []
            for waiter in self.sync_waiters:
                if hop.seq < waiter[1]:
                    waiter[0] -= 1
                    if waiter[0] == 0:
                        ready.append(waiter)
            for waiter in ready:
                self.sync_waiters.remove(waiter)
                waiter[2](waiter[3])
        if self.pair_last.get((src, dst)) is hop:
            del self.pair_last[(src, dst)]
        self.pin[src][h] -= 1
        self.bytes_moved[src][dst] += hop.size
        self.copies[src][dst] += 1
        if self.opt.trace:
            self.trace_hops.append((h, src, dst, hop.size, hop.t_start, self.env.now))
        if hop.version == self.version[h] and self.valid[h] & (1 << src):
            if not self.valid[h] >> dst & 1:
                self._set_valid(h, self.valid[h] | (1 << dst))
            if dst != RAM:
                if not self.alloc[h] >> dst & 1:
                    self._grant(h, dst)
                self._touch(dst, h)
        for nxt in hop.wake:
            nxt.nwait -= 1
            if nxt.nwait == 0:
                self._hop_start(nxt)
        hop.cont(hop.arg)
        if src != RAM and self.alloc_wait[src]:
            self._retry_alloc(src)
