"""``heft``: ready tasks in decreasing upward rank, each to the worker with the earliest expected finish time.

The upward rank of a task is its mean duration plus the longest path of mean
durations to the end of the graph; the finish time counts transfers at their
uncontended predicted time. Per-worker FIFOs, inputs prefetched.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from typing import TYPE_CHECKING

from nodecast.runtime.schedulers.base import PerWorkerFifo, SchedulerView

if TYPE_CHECKING:
    from nodecast.runtime.workers import Worker


class Heft(PerWorkerFifo):
    """Upward-rank order, earliest finish time with uncontended transfer predictions."""

    name = "heft"

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        succs = view.successors
        mean = [sum(lens) / len(lens) for lens in view.type_len]
        rank = [0.0] * view.n_tasks
        for t in range(view.n_tasks - 1, -1, -1):
            tail = 0.0
            for s in succs[t]:
                if rank[s] > tail:
                    tail = rank[s]
            rank[t] = mean[view.task_type[t]] + tail
        self.rank = rank
        self.ready: list[tuple[float, int]] = []
        self.avail = [0.0] * len(self.workers)

    def push(self, t: int) -> None:
        heappush(self.ready, (-self.rank[t], t))
        view = self.view
        now = view.clock.now
        plat = view.platform
        while self.ready:
            _, t = heappop(self.ready)
            lens = view.type_len[view.task_type[t]]
            best, best_eft = None, math.inf
            for w in self.workers:
                data = 0.0
                for h in view.task_reads[t]:
                    if not view.valid[h] >> w.node & 1:
                        src = view.select_src(h, w.node)
                        src = src if src >= 0 else 0
                        for a, b in plat.copy_path(src, w.node):
                            data += plat.predict_latency_s[a][b] + view.data_bytes[h] / plat.predict_bandwidth_bps[a][b]
                start = max(self.avail[w.wid], now, now + data)
                eft = start + lens[w.arch_index]
                if eft < best_eft:
                    best, best_eft = w, eft
            self.avail[best.wid] = best_eft
            self._assign(t, best, prefetch=True)

    def on_exec_end(self, w: Worker, t: int) -> None:
        now = self.view.clock.now
        if not self.queues[w.wid] and self.avail[w.wid] > now and w.ondevice == 0:
            self.avail[w.wid] = now
