"""StarPU's ``ws`` (work stealing; ``lws`` is the same here).

Per-worker queues ordered by priority. A task released by a worker's
completion goes to that worker's queue, others round-robin; every worker is
woken after a push. An idle worker first pops its own queue (highest
priority first), then steals the lowest-priority task of the first busy
worker with queued tasks, round-robin from its last victim.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from nodecast.runtime.schedulers.base import Scheduler, SchedulerView

if TYPE_CHECKING:
    from nodecast.runtime.workers import Worker


class WorkStealing(Scheduler):
    """Per-worker priority queues, local push, round-robin stealing (StarPU's ``ws``/``lws``)."""

    name = "ws"

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        n = len(self.workers)
        self.queues: list[dict[int, deque[int]]] = [{} for _ in range(n)]
        self.counts = [0] * n
        self.rr_push = 0
        self.rr_victim = [0] * n
        self.busy = [False] * n

    def push(self, t: int) -> None:
        view = self.view
        wid = view.releasing_worker
        if wid < 0:
            # select_worker_round_robin: the worker after the last one pushed to
            wid = self.rr_push = (self.rr_push + 1) % len(self.workers)
        prio = view.task_priority[t]
        q = self.queues[wid]
        bucket = q.get(prio)
        if bucket is None:
            bucket = q[prio] = deque()
        bucket.append(t)
        self.counts[wid] += 1
        # StarPU's ws wakes every worker after a push; idle ones then steal.
        w = self.workers[wid]
        if self._idle(w):
            view.wake(w)
        for other in self.workers:
            if other is not w and self._idle(other) and sum(self.counts):
                view.wake(other)

    def pop(self, w: Worker) -> int:
        wid = w.wid
        self.busy[wid] = False
        if self.counts[wid]:
            self.busy[wid] = True
            return self._take(wid, highest=True)
        # select_victim_round_robin: from the last victim tried, the first busy
        # worker that has queued tasks.
        n = len(self.workers)
        start = self.rr_victim[wid]
        for k in range(n):
            victim = (start + k) % n
            if self.counts[victim] and self.busy[victim]:
                self.rr_victim[wid] = (victim + 1) % n
                self.busy[wid] = True
                return self._take(victim, highest=False)
        self.rr_victim[wid] = start
        return -1

    def _take(self, wid: int, highest: bool) -> int:
        q = self.queues[wid]
        prio = max(p for p, b in q.items() if b) if highest else min(p for p, b in q.items() if b)
        bucket = q[prio]
        t = bucket.popleft() if highest else bucket.pop()
        self.counts[wid] -= 1
        return t
