"""StarPU's deque-model-data-aware family: ``dmda``, ``dmdar``, ``dmdas``.

``dmda``
    Each task goes to the worker that minimises
    ``alpha x (expected end - best expected end) + beta x expected transfer time``,
    where the expected end counts the worker's queued work, the kernel's mean
    duration and the predicted time of the missing input transfers (StarPU's
    ``starpu_transfer_predict``, including its 2 x ngpus contention factor);
    inputs are prefetched to the chosen worker; per-worker FIFOs.
``dmdar``
    dmda, but a worker pops, among the tasks of its queue's head priority or
    higher, the one with the fewest inputs not yet on its memory node
    (prefers ready data).
``dmdas``
    dmdar with queues sorted by priority (highest first).

The expected-time bookkeeping (``exp_start``, ``exp_len``, ``pipeline_len``)
follows StarPU's ``_starpu_fifo_task_transfer_started``,
``_starpu_fifo_task_started`` and ``_starpu_fifo_task_finished``.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from nodecast.runtime.schedulers.base import Scheduler, SchedulerView

if TYPE_CHECKING:
    from nodecast.runtime.workers import Worker


class _Fifo:
    """One worker's queue and StarPU's expected-time bookkeeping (``struct _starpu_fifo_taskq``)."""

    __slots__ = ("exp_start", "exp_len", "exp_end", "pipeline_len", "ntasks", "tasks", "buckets")

    def __init__(self) -> None:
        self.exp_start = math.nan
        self.exp_len = 0.0
        self.exp_end = math.nan
        self.pipeline_len = 0.0
        self.ntasks = 0
        self.tasks: deque[int] = deque()
        self.buckets: dict[int, deque[int]] = {}


class Dmda(Scheduler):
    """Deque model data aware: minimise alpha x termination + beta x transfer (StarPU's ``dmda``)."""

    name = "dmda"
    sorted_queue = False
    pop_ready = False

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        self.fifos = [_Fifo() for _ in self.workers]
        self.wf = [(w, self.fifos[w.wid], w.node, w.arch_index) for w in self.workers]
        self.alpha = view.options.alpha
        self.beta = view.options.beta
        self.predicted = [math.nan] * view.n_tasks
        self.predicted_transfer = [math.nan] * view.n_tasks
        self.prefetch = view.options.prefetch
        self.clock = view.clock

    def push(self, t: int) -> None:
        # NOTE: runs once per task over every worker: the runtime's tables are
        # bound to locals, and the cached transfer estimate is read inline
        # (``expected_transfer_s`` is only called on a cache miss).
        view = self.view
        now = self.clock.now
        lens = view.type_len[view.task_type[t]]
        valid = view.valid
        pending = view.requested
        cost_cache = view.transfer_estimates
        size = view.data_bytes
        # NOTE: valid masks do not change while a task is placed: read them once,
        # and skip the per-handle walk on nodes where every input is valid.
        hv = [(h, valid[h]) for h in view.task_reads[t]]
        all_valid = -1
        for _, v in hv:
            all_valid &= v
        best_end = math.inf
        cand = []
        for w, f, node, arch in self.wf:
            es = f.exp_start
            exp_start = now + f.pipeline_len if es != es else (es if es > now else now)
            penalty = 0.0
            if not all_valid >> node & 1:
                for h, v in hv:
                    if v >> node & 1 or (h << 8 | node) in pending:
                        continue
                    c = cost_cache.get((v, node, size[h]))
                    penalty += c if c is not None else view.expected_transfer_s(h, node)
            start = exp_start + f.exp_len
            if now + penalty > start:
                start = now + penalty
            length = lens[arch]
            end = start + length
            if end < best_end:
                best_end = end
            cand.append((end, penalty, w, length))
        best = None
        best_fit = math.inf
        alpha, beta = self.alpha, self.beta
        for c in cand:
            fit = alpha * (c[0] - best_end) + beta * c[1]
            if best is None or fit < best_fit:
                best_fit = fit
                best = c
        self._push_on(t, best[2], best[3], best[1])

    def _push_on(self, t: int, w: Worker, predicted: float, predicted_transfer: float) -> None:
        view = self.view
        now = self.clock.now
        f = self.fifos[w.wid]
        es = f.exp_start
        exp_start = f.exp_start = now + f.pipeline_len if es != es else (es if es > now else now)
        exp_end = exp_start + f.exp_len
        if now + predicted_transfer < exp_end:
            predicted_transfer = 0.0
        else:
            predicted_transfer = now + predicted_transfer - exp_end
        f.exp_len += predicted_transfer + predicted
        f.exp_end = exp_start + f.exp_len
        self.predicted[t] = predicted
        self.predicted_transfer[t] = predicted_transfer
        if self.prefetch:
            view.prefetch(t, w)
        if self.sorted_queue:
            prio = view.task_priority[t]
            b = f.buckets.get(prio)
            if b is None:
                b = f.buckets[prio] = deque()
            b.append(t)
        else:
            f.tasks.append(t)
        f.ntasks += 1
        if w.fetching < 0:  # NOTE: a worker still fetching cannot take it now; skip the call
            view.wake(w)

    def pop(self, w: Worker) -> int:
        f = self.fifos[w.wid]
        if not f.ntasks:
            return -1
        now = self.clock.now
        es = f.exp_start
        f.exp_start = now if es != es or es < now else es
        f.exp_end = f.exp_start + f.exp_len
        if self.sorted_queue:
            top = max(p for p, b in f.buckets.items() if b)
            q = f.buckets[top]
        else:
            q = f.tasks
        if self.pop_ready:
            t = self._first_ready(q, w)
        else:
            t = q.popleft()
        f.ntasks -= 1
        # _starpu_fifo_task_transfer_started
        pt = self.predicted_transfer[t]
        f.exp_len = exp_len = f.exp_len - pt
        f.pipeline_len = pipeline_len = f.pipeline_len + pt
        f.exp_start = exp_start = now + pipeline_len
        f.exp_end = exp_start + exp_len
        return t

    def _first_ready(self, q: deque[int], w: Worker) -> int:
        """StarPU's ``_starpu_fifo_pop_first_ready_task``: fewest inputs missing on the worker's node."""
        view = self.view
        prio = view.task_priority
        handles = view.task_handles
        valid = view.valid
        bit = 1 << w.node
        first_prio = prio[q[0]]
        best_i = 0
        best_missing = 1 << 30
        for i, t in enumerate(q):
            if prio[t] < first_prio:
                continue
            missing = 0
            for h in handles[t]:
                if not valid[h] & bit:
                    missing += 1
            if missing < best_missing:
                best_missing = missing
                best_i = i
                if missing == 0:
                    break
        t = q[best_i]
        del q[best_i]
        return t

    def on_exec_start(self, w: Worker, t: int) -> None:
        # _starpu_fifo_task_started, then exp_start = max(now + pipeline_len, exp_start)
        f = self.fifos[w.wid]
        now = self.clock.now
        model = self.predicted[t]
        # NOTE: same operations in the same order as attribute updates, on locals.
        pipeline_len = f.pipeline_len - self.predicted_transfer[t] + model
        exp_len = f.exp_len - model
        f.pipeline_len = pipeline_len
        f.exp_len = exp_len
        f.exp_start = exp_start = now + pipeline_len
        f.exp_end = exp_start + exp_len

    def on_exec_end(self, w: Worker, t: int) -> None:
        f = self.fifos[w.wid]
        now = self.clock.now
        f.pipeline_len = pipeline_len = f.pipeline_len - self.predicted[t]
        s = now + pipeline_len
        es = f.exp_start
        if es != es or s > es:
            f.exp_start = es = s
        f.exp_end = es + f.exp_len


class Dmdar(Dmda):
    """dmda whose workers prefer tasks whose data is already on their node (StarPU's ``dmdar``)."""

    name = "dmdar"
    pop_ready = True


class Dmdas(Dmda):
    """dmdar with priority-sorted queues (StarPU's ``dmdas``)."""

    name = "dmdas"
    pop_ready = True
    sorted_queue = True
