"""Requests: copies of data into a memory node, queued per channel within StarPU's limits (section 6).

A request asks for a data handle on a memory node (a task's input: *fetch*;
data a queued task will read: *prefetch*; a write-back when the bus is idle:
*idle*) and wakes whoever waits for it when it is done. Requests queue per
channel (StarPU: per handling node, peer node and direction; channel id =
(handler x nodes + peer) x 2 + (0 in, 1 out)), and each channel dispatches
fetch before prefetch before idle, with at most 20 requests in flight, 10
prefetches, 1 idle (``RuntimeOptions.max_requests``...). A dispatched request
first gets room on its node (``nodecast.runtime.allocation``), then its copy
(``nodecast.runtime.transfers``).
"""

from __future__ import annotations

from nodecast.engine.platform import RAM

#: Request kinds, most urgent first (a request is upgraded when a more urgent one asks for the same copy).
FETCH, PREFETCH, IDLE = 0, 1, 2


class Request:
    """A copy of data handle ``h`` into memory node ``dst`` (one or two hops), and who waits for it."""

    __slots__ = ("h", "dst", "kind", "handler", "ch", "waiters", "state", "queued")

    def __init__(self, h: int, dst: int, kind: int, handler: int, ch: int) -> None:
        self.h = h
        self.dst = dst
        self.kind = kind
        self.handler = handler
        self.ch = ch
        self.waiters: list = []
        self.state = 0  # 0 queued, 1 dispatched, 2 done, 3 dropped
        self.queued = True


class Requests:
    """The request part of ``Simulation`` (a mixin: the state it uses is set up by ``Simulation``)."""

    def request(self, h: int, dst: int, kind: int, cb, arg, *, handler: int | None = None) -> None:
        """Make ``h`` valid on ``dst``; ``cb(arg)`` runs when it is (prefetches may be dropped)."""
        key = h << 8 | dst
        req = self.pending.get(key)
        if req is not None:
            if cb is not None:
                req.waiters.append((cb, arg))
            if kind < req.kind:
                self._upgrade(req, kind)
            return
        nn = self.nn
        if dst == RAM:
            if handler is None:
                handler = self._any_valid_gpu(h)
            ch = (handler * nn + RAM) * 2 + 1
        else:
            handler = dst
            src = self.select_src(h, dst)
            ch = (dst * nn + (src if src >= 0 else RAM)) * 2
        req = Request(h, dst, kind, handler, ch)
        if cb is not None:
            req.waiters.append((cb, arg))
        self.pending[key] = req
        self.req_queues[ch][kind].append(req)
        self._pump(ch)

    def request_alloc(self, h: int, dst: int, cb, arg) -> None:
        """Allocate a chunk for ``h`` on ``dst`` without copying data (write-only access)."""
        key = h << 8 | dst
        req = self.pending.get(key)
        if req is not None:
            req.waiters.append((cb, arg))
            if req.kind != FETCH:
                self._upgrade(req, FETCH)
            return
        ch = (dst * self.nn + RAM) * 2
        req = Request(h, dst, FETCH, dst, ch)
        req.waiters.append((cb, arg))
        req.state = 1
        req.queued = False
        self.pending[key] = req
        self.inflight[ch] += 1
        self._allocate(req, alloc_only=True)

    def _any_valid_gpu(self, h: int) -> int:
        v = self.valid[h]
        node = 1
        while v >> node:
            if v >> node & 1:
                return node
            node += 1
        return RAM

    def _upgrade(self, req: Request, kind: int) -> None:
        old = req.kind
        req.kind = kind
        if req.queued:
            q = self.req_queues[req.ch]
            try:
                q[old].remove(req)
            except ValueError:
                pass
            q[kind].append(req)
            self._pump(req.ch)

    def _unblock(self, node: int) -> None:
        """Memory may have changed on ``node``: let its channels retry the prefetches that lacked room."""
        # NOTE: called after every task and request on a GPU; the per-node count
        # of blocked channels skips the channel scan when none is blocked.
        if not self.n_oom_blocked[node]:
            return
        blocked = self.oom_blocked
        for ch in self.channels_of[node]:
            if blocked[ch]:
                blocked[ch] = False
                self.n_oom_blocked[node] -= 1
                self._pump(ch)

    def _pump_node(self, node: int) -> None:
        for ch in self.channels_of[node]:
            if self.req_queues[ch][0] or self.req_queues[ch][1] or self.req_queues[ch][2]:
                self._pump(ch)

    def _pump(self, ch: int) -> None:
        """Dispatch the queued requests of channel ``ch`` within StarPU's in-flight limits.

        Fetches while fewer than 20 requests of the channel are in flight,
        prefetches (once no fetch waits) while fewer than 10, idle requests only
        when none is.
        """
        handler = ch // 2 // self.nn
        if self.purging[handler] or self.pumping[ch]:
            return  # blocked in a purge, or an outer _pump of this channel is looping already
        self.pumping[ch] = True
        try:
            fq, pq, iq = self.req_queues[ch]
            inflight = self.inflight
            opt = self.opt
            while not self.purging[handler]:
                n = inflight[ch]
                if fq and n < opt.max_requests:
                    req = fq.popleft()
                elif self.oom_blocked[ch]:
                    return
                elif not fq and pq and n < opt.max_prefetch_requests:
                    req = pq.popleft()
                elif not fq and not pq and iq and n < opt.max_idle_requests:
                    req = iq.popleft()
                else:
                    return
                req.queued = False
                if req.state != 0:
                    continue
                req.state = 1
                inflight[ch] = n + 1
                self._allocate(req)
        finally:
            self.pumping[ch] = False

    def _finish(self, req: Request) -> None:
        key = req.h << 8 | req.dst
        if self.pending.get(key) is req:
            del self.pending[key]
        req.state = 2
        self.inflight[req.ch] -= 1
        for cb, arg in req.waiters:
            cb(arg)
        self._pump(req.ch)
        if req.dst != RAM:
            if self.alloc_wait[req.dst]:
                self._retry_alloc(req.dst)
            self._unblock(req.dst)

    def _drop(self, req: Request) -> None:
        """A prefetch or idle request that found no room: put it back and retry it later.

        StarPU keeps a request that failed with ENOMEM at the head of its list
        and stops pushing prefetches on that channel; they are tried again
        when the driver progresses (here: when a task ends on the node or a
        request into it finishes).
        """
        req.state = 0
        req.queued = True
        self.inflight[req.ch] -= 1
        self.dropped_prefetches += 1
        self.req_queues[req.ch][req.kind].appendleft(req)
        if not self.oom_blocked[req.ch]:
            self.oom_blocked[req.ch] = True
            self.n_oom_blocked[req.ch // 2 // self.nn] += 1
