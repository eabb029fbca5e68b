"""GPU memory allocation: room for a copy, chunk reuse, eviction and StarPU's purge (section 5).

GPU memory is bounded (``nodecast.runtime.memory.MemoryNode``): StarPU 1.4
uses 90 % of the device memory, in whole MiB (``gpu_memory_margin``). A
replica to bring in needs a chunk: a cached chunk, a new one (``cudaMalloc``
cost, serialised across GPUs as StarPU's simulated allocator is), or the
chunk of a clean replica (valid elsewhere), least recently used first. When
no clean chunk can be taken StarPU *purges*: it frees twice the needed size,
writing dirty replicas back to RAM first, pays ``cudaFree`` per chunk (which
also waits for every transfer in flight) and ``cudaMalloc``; the GPU's
driver handles nothing else meanwhile. Idle requests never evict;
prefetches do not evict data prefetched for another queued task.
"""

from __future__ import annotations

from collections import deque
from heapq import heappush

from nodecast.engine.platform import RAM
from nodecast.runtime.requests import FETCH, IDLE, PREFETCH, Request


class Allocation:
    """The GPU-memory part of ``Simulation`` (a mixin: the state it uses is set up by ``Simulation``)."""

    # Protocol: every path out of _allocate that succeeds calls _after_alloc
    # with the request's replica pinned once on its node (so that nobody can
    # evict the chunk while the copy is staged or in flight); _after_alloc
    # releases that pin when the request finishes.
    def _allocate(self, req: Request, alloc_only: bool = False) -> None:
        h, dst = req.h, req.dst
        pin = self.pin[dst]
        if dst == RAM or self.alloc[h] >> dst & 1 or self.valid[h] >> dst & 1:
            pin[h] += 1
            self._after_alloc(req, alloc_only)
            return
        m = self.mem[dst]
        size = self.size[h]
        if m.take_cached(size):
            self._grant(h, dst)
            pin[h] += 1
            self._after_alloc(req, alloc_only)
            return
        delay = 0.0
        ovh = self.opt.overheads
        if not m.fits(size) and m.cache:
            delay += m.free_cached(size) * ovh.cuda_free_s
        if m.fits(size):
            m.add_chunk(size)
            self._grant(h, dst)
            pin[h] += 1
            # cudaFree/cudaMalloc under StarPU's global allocation lock
            delay += ovh.cuda_malloc_s
            now = self.env.now
            end = (now if now > self.malloc_free_at else self.malloc_free_at) + delay
            self.malloc_free_at = end
            if end > now:
                heappush(self.env.queue, (end, next(self.env.counter), self._after_alloc_ev, (req, alloc_only)))
            else:
                self._after_alloc(req, alloc_only)
            return
        m.full_events += 1
        if req.kind == IDLE:
            self._drop(req)  # StarPU never evicts for an idle request
            return
        victim, other_sizes = self._find_clean_victim(dst, size, req.kind == FETCH)
        if victim >= 0:
            # try_to_reuse_potentially_in_use_mc: take over a clean chunk, no cost
            self._evict(dst, victim, free_chunk=False)
            self._grant(h, dst)
            pin[h] += 1
            self._after_alloc(req, alloc_only)
            return
        self._purge(req, alloc_only, other_sizes)

    def _find_clean_victim(self, node: int, size: int, demand: bool) -> tuple[int, bool]:
        """First chunk of ``size`` bytes, least recently used first, that can be dropped without a write-back.

        Also says whether some droppable clean chunk of another size was seen.
        """
        pin = self.pin[node]
        pf = self.prefetched[node]
        pending = self.pending
        sizes = self.size
        other = False
        for h in self.clean_lru[node]:
            if pin[h] or (not demand and h in pf) or (h << 8 | node) in pending:
                continue
            if sizes[h] == size:
                return h, other
            other = True
        return -1, other

    def _purge(self, req: Request, alloc_only: bool, scan_clean: bool = True) -> None:
        """StarPU's memory reclaim: free 2 x size bytes (writing dirty chunks back first), then cudaMalloc.

        Each freed chunk costs ``cuda_free_s`` and the allocation ``cuda_malloc_s``,
        under the global allocation lock.
        """
        dst = req.dst
        m = self.mem[dst]
        size = self.size[req.h]
        demand = req.kind == FETCH
        pin = self.pin[dst]
        pf = self.prefetched[dst]
        pending = self.pending
        victims: list[tuple[int, bool]] = []
        freed = 0
        need = 2 * size
        sizes = self.size
        lists = ((self.clean_lru[dst], False), (self.dirty_lru[dst], True)) if scan_clean else ((self.dirty_lru[dst], True),)
        for lru, dirty in lists:
            if freed >= need:
                break
            for h in lru:
                if pin[h] or (not demand and h in pf) or (h << 8 | dst) in pending or (h << 8 | RAM) in pending:
                    continue
                victims.append((h, dirty))
                freed += sizes[h]
                if freed >= need:
                    break
        if not victims:
            if demand:
                self.alloc_wait[dst].append((req, alloc_only))
            else:
                self._drop(req)
            return
        m.purges += 1
        self.purging[dst] += 1
        state = [len(victims), req, alloc_only]
        for h, dirty in victims:
            pin[h] += 1
        for h, dirty in victims:
            if dirty:
                m.write_backs += 1
                self.sync_writebacks += 1
                self._hop(h, dst, RAM, self._purge_step, (state, h))
            else:
                self._purge_step((state, h))

    def _purge_step(self, arg) -> None:
        state, v = arg
        req = state[1]
        dst = req.dst
        pin = self.pin[dst]
        pin[v] -= 1
        if self.alloc[v] >> dst & 1 and not pin[v] and self.valid[v] != 1 << dst:
            self._evict(dst, v, free_chunk=True)
            self.mem[dst].frees += 1
            state.append(v)
        state[0] -= 1
        if state[0]:
            return
        # Each cudaFree synchronises every GPU (waits for all transfers in
        # flight), then takes cuda_free_s under the global allocation lock.
        self._purge_free((req, state[2], len(state) - 3))

    def _sync_transfers(self, cb, arg) -> None:
        """Call ``cb(arg)`` once every transfer started so far has ended (StarPU's simulated cudaFree sync)."""
        limit = self.hop_seq
        live = sum(1 for seq in self.live_hops if seq < limit)
        if not live:
            cb(arg)
        else:
            self.sync_waiters.append([live, limit, cb, arg])

    def _purge_free(self, arg) -> None:
        req, alloc_only, nfree = arg
        if nfree == 0:
            self._purge_done((req, alloc_only))
        else:
            self._sync_transfers(self._purge_free_one, (req, alloc_only, nfree))

    def _purge_free_one(self, arg) -> None:
        req, alloc_only, nfree = arg
        now = self.env.now
        end = (now if now > self.malloc_free_at else self.malloc_free_at) + self.opt.overheads.cuda_free_s
        self.malloc_free_at = end
        heappush(self.env.queue, (end, next(self.env.counter), self._purge_free, (req, alloc_only, nfree - 1)))

    def _purge_done(self, arg) -> None:
        req, alloc_only = arg
        dst = req.dst
        self.purging[dst] -= 1
        self._allocate(req, alloc_only)  # now there is room for a cudaMalloc (unless taken meanwhile)
        if not self.purging[dst]:
            deferred = self.deferred[dst]
            self.deferred[dst] = []
            for t in deferred:
                self._data_ready(t)
            self._pump_node(dst)

    def _evict(self, node: int, h: int, free_chunk: bool) -> None:
        """Drop ``h``'s replica on ``node``; its chunk is freed or handed over to the caller."""
        b = 1 << node
        if free_chunk:
            self.mem[node].used_bytes -= self.size[h]
        if self.valid[h] & b:
            self.mem[node].evictions += 1
            self._set_valid(h, self.valid[h] & ~b)
            if self.opt.trace:
                self.trace_evictions.append((self.env.now, node, h, True))
        self.clean_lru[node].pop(h, None)
        self.dirty_lru[node].pop(h, None)
        self.alloc[h] &= ~b

    def _grant(self, h: int, node: int) -> None:
        self.alloc[h] |= 1 << node
        if self.valid[h] == 1 << node:
            self.dirty_lru[node][h] = None
        else:
            self.clean_lru[node][h] = None

    def _retry_alloc(self, node: int) -> None:
        waiting = self.alloc_wait[node]
        self.alloc_wait[node] = deque()
        while waiting:
            req, alloc_only = waiting.popleft()
            self._allocate(req, alloc_only)

    def _after_alloc_ev(self, arg) -> None:
        self._after_alloc(*arg)

    def _after_alloc(self, req: Request, alloc_only: bool) -> None:
        h, dst = req.h, req.dst
        if alloc_only or self.valid[h] >> dst & 1:
            self.pin[dst][h] -= 1
            self._finish(req)
            return
        src = self.select_src(h, dst)
        if src < 0:
            # Only GPUs without a peer path hold it: stage through RAM first.
            self.request(h, RAM, min(req.kind, PREFETCH), self._after_alloc_staged, req, handler=self._any_valid_gpu(h))
            return
        self._hop(h, src, dst, self._copy_done, req)

    def _after_alloc_staged(self, req: Request) -> None:
        self._after_alloc(req, False)

    def _copy_done(self, req: Request) -> None:
        self.pin[req.dst][req.h] -= 1
        self._finish(req)
