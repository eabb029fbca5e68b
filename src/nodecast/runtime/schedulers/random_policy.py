"""StarPU's ``random``: each task goes to a worker drawn at random, in proportion to its speed for that task.

The draw is seeded (``RuntimeOptions.seed``); per-worker FIFOs; inputs are
prefetched to the chosen worker.
"""

from __future__ import annotations

import numpy as np

from nodecast.runtime.schedulers.base import PerWorkerFifo, SchedulerView


class RandomPolicy(PerWorkerFifo):
    """Worker drawn with probability proportional to its speed for the task (StarPU's ``random``)."""

    name = "random"

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        self.rng = np.random.default_rng(view.options.seed)

    def push(self, t: int) -> None:
        view = self.view
        lens = view.type_len[view.task_type[t]]
        speeds = [1.0 / lens[w.arch_index] for w in self.workers]
        x = self.rng.random() * sum(speeds)
        chosen = self.workers[-1]
        for w, s in zip(self.workers, speeds, strict=True):
            if x < s:
                chosen = w
                break
            x -= s
        self._assign(t, chosen, prefetch=True)
