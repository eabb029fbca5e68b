"""Data coherence: which memory nodes hold a valid copy of each data handle (section 5).

MSI-like coherence per data handle and memory node: ``valid[h]`` is a bit
mask of the nodes with a valid copy (bit 0: RAM), reads create replicas, a
write invalidates every other replica. On each GPU, replicas with memory
there are kept in two least-recently-used orders, clean (valid elsewhere
too) and dirty (the only valid copy: a write-back before the chunk can be
reused). ``wont_use`` hints move chunks to the front of the eviction order
and queue an idle write-back; when fewer than 5 % of a GPU's chunks are
clean, idle write-backs are queued until 10 % are (StarPU's minimum/target
clean buffers). The transfer predictions the schedulers weigh
(``expected_transfer_s``, StarPU's ``starpu_data_expected_transfer_time``)
read the same masks.
"""

from __future__ import annotations

import math

from nodecast.engine.platform import RAM
from nodecast.runtime.requests import IDLE, PREFETCH
from nodecast.runtime.workers import Worker


class Coherence:
    """The coherence part of ``Simulation`` (a mixin: the state it uses is set up by ``Simulation``)."""

    def _set_valid(self, h: int, new: int) -> None:
        """Change the valid-node mask of ``h``, keeping the per-GPU clean/dirty LRU split right."""
        old = self.valid[h]
        self.valid[h] = new
        changed = (old | new) & self.alloc[h] & ~1
        node = 1
        while changed >> node:
            if changed >> node & 1:
                b = 1 << node
                was = old == b
                now_dirty = new == b
                if was != now_dirty:
                    if now_dirty:
                        self.clean_lru[node].pop(h, None)
                        self.dirty_lru[node][h] = None
                    else:
                        self.dirty_lru[node].pop(h, None)
                        self.clean_lru[node][h] = None
            node += 1

    def _touch(self, node: int, h: int) -> None:
        if self.valid[h] == 1 << node:
            self.dirty_lru[node].move_to_end(h)
        else:
            self.clean_lru[node].move_to_end(h)

    def _wont_use(self, h: int) -> None:
        """StarPU's ``starpu_data_wont_use``: evict first, and write back to RAM when the bus is idle."""
        a = self.alloc[h]
        for node in self.platform.gpu_nodes:
            if a & (1 << node):
                if self.valid[h] == 1 << node:
                    self.dirty_lru[node].move_to_end(h, last=False)
                    if (h << 8 | RAM) not in self.pending:
                        self.request(h, RAM, IDLE, None, None, handler=node)
                else:
                    self.clean_lru[node].move_to_end(h, last=False)

    def _tidy(self, node: int) -> None:
        """Queue idle write-backs when fewer than 5 % of the node's chunks are clean (up to 10 %)."""
        dirty = self.dirty_lru[node]
        nchunks = len(dirty) + len(self.clean_lru[node])
        if not nchunks:
            return
        clean = nchunks - len(dirty)
        if clean >= self.opt.min_clean_fraction * nchunks:
            return
        target = self.opt.target_clean_fraction * nchunks
        ch = (node * self.nn + RAM) * 2 + 1
        planned = self.inflight[ch] + len(self.req_queues[ch][IDLE])
        pin = self.pin[node]
        pending = self.pending
        chosen = []
        for h in dirty:
            if clean + planned >= target:
                break
            if pin[h] or (h << 8 | RAM) in pending:
                continue
            chosen.append(h)
            planned += 1
        for h in chosen:
            self.request(h, RAM, IDLE, None, None, handler=node)

    def select_src(self, h: int, dst: int) -> int:
        """StarPU's ``_starpu_select_src_node``: the valid copy with the lowest predicted direct transfer time.

        Returns -1 when every valid copy is on a GPU that cannot copy directly to ``dst``.
        """
        v = self.valid[h]
        if v & 1:
            best, best_cost = RAM, self.predict(RAM, dst, self.size[h])
        else:
            best, best_cost = -1, math.inf
        plat = self.platform
        node = 1
        while v >> node:
            if v >> node & 1 and node != dst:
                if dst == RAM or plat.peer[node][dst]:
                    c = self.predict(node, dst, self.size[h])
                    if c < best_cost:
                        best, best_cost = node, c
            node += 1
        return best

    def predict(self, src: int, dst: int, size: int) -> float:
        key = (src, dst, size)
        c = self._predict_cache.get(key)
        if c is None:
            c = self._predict_cache[key] = self.platform.predict_transfer_s(src, dst, size)
        return c

    def expected_transfer_s(self, h: int, node: int) -> float:
        """StarPU's ``starpu_data_expected_transfer_time``: 0 when valid or requested on ``node``."""
        v = self.valid[h]
        if v >> node & 1 or (h << 8 | node) in self.pending:
            return 0.0
        size = self.size[h]
        key = (v, node, size)
        c = self._cost_cache.get(key)
        if c is None:
            src = self.select_src(h, node)
            if src >= 0:
                c = self.predict(src, node, size)
            else:
                g = self._any_valid_gpu(h)
                c = self.predict(g, RAM, size) + self.predict(RAM, node, size)
            self._cost_cache[key] = c
        return c

    def prefetch_task(self, t: int, w: Worker) -> None:
        """StarPU's ``starpu_prefetch_task_input_for``: prefetch the task's read data to the worker's node."""
        node = w.node
        bit = 1 << node
        valid = self.valid
        pf = self.prefetched[node]
        pending = self.pending
        for h in self.task_reads[t]:
            pf[h] = pf.get(h, 0) + 1
            if not valid[h] & bit and (h << 8 | node) not in pending:
                self.request(h, node, PREFETCH, None, None)
        self.task_prefetched[t] = True
