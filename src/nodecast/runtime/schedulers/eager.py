"""StarPU's ``eager``: one central FIFO; an idle worker takes the oldest task it can run.

Priorities are ignored, nothing is prefetched.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from nodecast.runtime.schedulers.base import Scheduler, SchedulerView

if TYPE_CHECKING:
    from nodecast.runtime.workers import Worker


class Eager(Scheduler):
    """Central FIFO, no priorities, no prefetch (StarPU's ``eager``)."""

    name = "eager"

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        self.queue: deque[int] = deque()

    def push(self, t: int) -> None:
        self.queue.append(t)
        if self.view.releasing_worker >= 0:
            # Released by a worker's completion: that worker loops straight
            # back to the queue before any woken worker (see after_completion).
            return
        self._wake_one()

    def after_completion(self, w: Worker) -> None:
        while self.queue and self._wake_one():
            pass

    def _wake_one(self) -> bool:
        # StarPU wakes one sleeping worker (one with nothing to do); a GPU that
        # is running a kernel but has room in its pipeline takes it otherwise.
        for w in self.workers:
            if w.fetching < 0 and w.ondevice == 0 and not w.blocked:
                self.view.wake(w)
                return True
        for w in self.workers:
            if self._idle(w):
                n = len(self.queue)
                self.view.wake(w)
                if len(self.queue) < n:
                    return True
        return False

    def pop(self, w: Worker) -> int:
        return self.queue.popleft() if self.queue else -1
