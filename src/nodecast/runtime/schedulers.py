"""Scheduling policies with StarPU 1.4's semantics (Stanisic et al., sections 1 and 8).

A policy receives ready tasks (``push``) and hands tasks to workers that ask
for one (``pop``); the runtime calls ``on_exec_start``/``on_exec_end`` where
StarPU calls its pre/post execution hooks.

``eager``
    One central FIFO; an idle worker takes the oldest task it can run.
    Priorities are ignored, nothing is prefetched.
``random``
    Each task goes to a worker drawn at random with probability proportional
    to the worker's speed for that task (seeded); per-worker FIFOs.
``ws`` (work stealing; ``lws`` is the same here)
    Per-worker queues ordered by priority. A task released by a worker's
    completion goes to that worker's queue, others round-robin; every worker
    is woken after a push. An idle worker first pops its own queue (highest
    priority first), then steals the lowest-priority task of the first busy
    worker with queued tasks, round-robin from its last victim.
``dmda`` (deque model data aware)
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
``heft``
    Ready tasks are taken in decreasing upward rank (mean duration plus the
    longest path of mean durations to the end of the graph) and each goes to
    the worker with the earliest expected finish time, transfers included at
    their uncontended predicted time; per-worker FIFOs, inputs prefetched.

The expected-time bookkeeping of the dmda family (``exp_start``, ``exp_len``,
``pipeline_len``) follows StarPU's ``_starpu_fifo_task_transfer_started``,
``_starpu_fifo_task_started`` and ``_starpu_fifo_task_finished``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from heapq import heappop, heappush
from typing import TYPE_CHECKING

import numpy as np

from nodecast.errors import InputError
from nodecast.graph.taskgraph import R

if TYPE_CHECKING:
    from nodecast.runtime.simulation import Simulation, Worker

SCHEDULERS = ("eager", "random", "ws", "lws", "dmda", "dmdar", "dmdas", "heft")


class Scheduler(ABC):
    """Base policy: subclasses implement ``push`` and ``pop``."""

    name = "base"

    def __init__(self, rt: Simulation) -> None:
        self.rt = rt
        self.workers = rt.workers

    @abstractmethod
    def push(self, t: int) -> None:
        """Task ``t`` became ready: place it (a queue, a worker)."""

    @abstractmethod
    def pop(self, w: Worker) -> int:
        """The next task for idle worker ``w``, or -1 when there is none."""

    def on_exec_start(self, w: Worker, t: int) -> None:
        pass

    def on_exec_end(self, w: Worker, t: int) -> None:
        pass

    def after_completion(self, w: Worker) -> None:
        """Called once worker ``w`` finished a task, released its successors and looked for work itself."""

    def _idle(self, w: Worker) -> bool:
        return w.fetching < 0 and not w.blocked and w.ondevice < w.pipeline


class Eager(Scheduler):
    """Central FIFO, no priorities, no prefetch (StarPU's ``eager``)."""

    name = "eager"

    def __init__(self, rt: Simulation) -> None:
        super().__init__(rt)
        self.queue: deque[int] = deque()

    def push(self, t: int) -> None:
        self.queue.append(t)
        if self.rt.current_worker >= 0:
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
                self.rt.wake(w)
                return True
        for w in self.workers:
            if self._idle(w):
                n = len(self.queue)
                self.rt.wake(w)
                if len(self.queue) < n:
                    return True
        return False

    def pop(self, w: Worker) -> int:
        return self.queue.popleft() if self.queue else -1


class _PerWorkerFifo(Scheduler):
    def __init__(self, rt: Simulation) -> None:
        super().__init__(rt)
        self.queues: list[deque[int]] = [deque() for _ in self.workers]

    def _assign(self, t: int, w: Worker, prefetch: bool) -> None:
        self.queues[w.wid].append(t)
        if prefetch and self.rt.opt.prefetch:
            self.rt.prefetch_task(t, w)
        self.rt.wake(w)

    def pop(self, w: Worker) -> int:
        q = self.queues[w.wid]
        return q.popleft() if q else -1


class RandomPolicy(_PerWorkerFifo):
    """Worker drawn with probability proportional to its speed for the task (StarPU's ``random``)."""

    name = "random"

    def __init__(self, rt: Simulation) -> None:
        super().__init__(rt)
        self.rng = np.random.default_rng(rt.opt.seed)

    def push(self, t: int) -> None:
        rt = self.rt
        lens = rt.type_len[rt.task_type[t]]
        speeds = [1.0 / lens[w.arch_index] for w in self.workers]
        x = self.rng.random() * sum(speeds)
        chosen = self.workers[-1]
        for w, s in zip(self.workers, speeds, strict=True):
            if x < s:
                chosen = w
                break
            x -= s
        self._assign(t, chosen, prefetch=True)


class WorkStealing(Scheduler):
    """Per-worker priority queues, local push, round-robin stealing (StarPU's ``ws``/``lws``)."""

    name = "ws"

    def __init__(self, rt: Simulation) -> None:
        super().__init__(rt)
        n = len(self.workers)
        self.queues: list[dict[int, deque[int]]] = [{} for _ in range(n)]
        self.counts = [0] * n
        self.rr_push = 0
        self.rr_victim = [0] * n
        self.busy = [False] * n

    def push(self, t: int) -> None:
        rt = self.rt
        wid = rt.current_worker
        if wid < 0:
            # select_worker_round_robin: the worker after the last one pushed to
            wid = self.rr_push = (self.rr_push + 1) % len(self.workers)
        prio = rt.task_priority[t]
        q = self.queues[wid]
        bucket = q.get(prio)
        if bucket is None:
            bucket = q[prio] = deque()
        bucket.append(t)
        self.counts[wid] += 1
        # StarPU's ws wakes every worker after a push; idle ones then steal.
        w = self.workers[wid]
        if self._idle(w):
            rt.wake(w)
        for other in self.workers:
            if other is not w and self._idle(other) and sum(self.counts):
                rt.wake(other)

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

    def __init__(self, rt: Simulation) -> None:
        super().__init__(rt)
        self.fifos = [_Fifo() for _ in self.workers]
        self.wf = [(w, self.fifos[w.wid], w.node, w.arch_index) for w in self.workers]
        self.alpha = rt.opt.alpha
        self.beta = rt.opt.beta
        self.predicted = [math.nan] * rt.n_tasks
        self.predicted_transfer = [math.nan] * rt.n_tasks
        self.prefetch = rt.opt.prefetch
        self.env = rt.env

    def push(self, t: int) -> None:
        # NOTE: runs once per task over every worker: the runtime's tables are
        # bound to locals, and the cached transfer estimate is read inline
        # (``expected_transfer_s`` is only called on a cache miss).
        rt = self.rt
        now = rt.env.now
        lens = rt.type_len[rt.task_type[t]]
        valid = rt.valid
        pending = rt.pending
        cost_cache = rt._cost_cache
        size = rt.size
        # NOTE: valid masks do not change while a task is placed: read them once,
        # and skip the per-handle walk on nodes where every input is valid.
        hv = [(h, valid[h]) for h in rt.task_reads[t]]
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
                    penalty += c if c is not None else rt.expected_transfer_s(h, node)
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
        rt = self.rt
        now = rt.env.now
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
            rt.prefetch_task(t, w)
        if self.sorted_queue:
            prio = rt.task_priority[t]
            b = f.buckets.get(prio)
            if b is None:
                b = f.buckets[prio] = deque()
            b.append(t)
        else:
            f.tasks.append(t)
        f.ntasks += 1
        if w.fetching < 0:  # NOTE: a worker still fetching cannot take it now; skip the call
            rt._progress(w)

    def pop(self, w: Worker) -> int:
        f = self.fifos[w.wid]
        if not f.ntasks:
            return -1
        now = self.env.now
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
        rt = self.rt
        prio = rt.task_priority
        handles = rt.task_handles
        valid = rt.valid
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
        now = self.env.now
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
        now = self.env.now
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


class Heft(_PerWorkerFifo):
    """Upward-rank order, earliest finish time with uncontended transfer predictions."""

    name = "heft"

    def __init__(self, rt: Simulation) -> None:
        super().__init__(rt)
        succs = rt.succs
        mean = [sum(lens) / len(lens) for lens in rt.type_len]
        rank = [0.0] * rt.n_tasks
        for t in range(rt.n_tasks - 1, -1, -1):
            tail = 0.0
            for s in succs[t]:
                if rank[s] > tail:
                    tail = rank[s]
            rank[t] = mean[rt.task_type[t]] + tail
        self.rank = rank
        self.ready: list[tuple[float, int]] = []
        self.avail = [0.0] * len(self.workers)

    def push(self, t: int) -> None:
        heappush(self.ready, (-self.rank[t], t))
        rt = self.rt
        now = rt.env.now
        plat = rt.platform
        while self.ready:
            _, t = heappop(self.ready)
            lens = rt.type_len[rt.task_type[t]]
            best, best_eft = None, math.inf
            for w in self.workers:
                data = 0.0
                for h, m in zip(rt.task_handles[t], rt.task_modes[t], strict=True):
                    if m & R and not rt.valid[h] >> w.node & 1:
                        src = rt.select_src(h, w.node)
                        src = src if src >= 0 else 0
                        for a, b in plat.copy_path(src, w.node):
                            data += plat.predict_latency_s[a][b] + rt.size[h] / plat.predict_bandwidth_bps[a][b]
                start = max(self.avail[w.wid], now, now + data)
                eft = start + lens[w.arch_index]
                if eft < best_eft:
                    best, best_eft = w, eft
            self.avail[best.wid] = best_eft
            self._assign(t, best, prefetch=True)

    def on_exec_end(self, w: Worker, t: int) -> None:
        now = self.rt.env.now
        if not self.queues[w.wid] and self.avail[w.wid] > now and w.ondevice == 0:
            self.avail[w.wid] = now


_POLICIES = {
    "eager": Eager,
    "random": RandomPolicy,
    "ws": WorkStealing,
    "lws": WorkStealing,
    "dmda": Dmda,
    "dmdar": Dmdar,
    "dmdas": Dmdas,
    "heft": Heft,
}


def make_scheduler(name: str, rt: Simulation) -> Scheduler:
    """The policy called ``name``. Raises InputError for an unknown name."""
    try:
        cls = _POLICIES[name]
    except KeyError:
        raise InputError(f"unknown scheduler {name!r}", key="--scheduler", hint=f"Choose one of {', '.join(SCHEDULERS)}") from None
    return cls(rt)
