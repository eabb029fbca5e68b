"""Task execution: a ready task goes to the scheduler, a worker fetches its data and runs it (sections 3, 4, 7).

A task whose dependencies are done is pushed to the scheduling policy; a
worker asking for work pops a task, requests its inputs on its memory node
(one task's inputs at a time), and runs the kernel once they are there for a
duration from ``KernelModels`` (mean, or sampled). A GPU worker keeps up to
``pipeline`` (2) kernels queued on its device; queuing a kernel costs the
driver ``gpu_queue_s``; kernels without ``async`` (POTRF, GETRF) run
synchronously and block the driver. When a task ends it releases its
successors (pushed at once, or at their submission time if later) and its
``wont_use`` hints.
"""

from __future__ import annotations

from heapq import heappush

from nodecast.graph.taskgraph import R, W
from nodecast.runtime.requests import FETCH
from nodecast.runtime.workers import Worker


class TaskExecution:
    """The task part of ``Simulation`` (a mixin: the state it uses is set up by ``Simulation``)."""

    def _push(self, t: int) -> None:
        self.task_ready[t] = self.env.now
        self.sched.push(t)

    def wake(self, w: Worker) -> None:
        """Let worker ``w`` look for work now: it pops tasks from the policy while it has room for one."""
        pop = self.sched.pop
        fetch = self._start_fetch
        if w.is_gpu:
            while w.fetching < 0 and not w.blocked and w.ondevice < w.pipeline:
                t = pop(w)
                if t < 0:
                    return
                fetch(w, t)
        else:
            while w.fetching < 0 and w.ondevice == 0:
                t = pop(w)
                if t < 0:
                    return
                fetch(w, t)

    def _start_fetch(self, w: Worker, t: int) -> None:
        w.fetching = t
        self.task_worker[t] = w.wid
        node = w.node
        if self.task_prefetched[t]:
            pf = self.prefetched[node]
            for h in self.task_reads[t]:
                n = pf.get(h, 0) - 1
                if n > 0:
                    pf[h] = n
                elif n == 0:
                    del pf[h]
        pin = self.pin[node]
        valid = self.valid
        alloc = self.alloc
        wait = self.task_wait
        # One sentinel count so that a request completing synchronously cannot
        # fire the task before all its requests are issued.
        wait[t] = 1
        for h, m in zip(self.task_handles[t], self.task_modes[t]):
            pin[h] += 1
            if m & R:
                if not valid[h] >> node & 1:
                    wait[t] += 1
                    self.request(h, node, FETCH, self._input_ready, t)
            elif not alloc[h] >> node & 1:
                wait[t] += 1
                self.request_alloc(h, node, self._input_ready, t)
        # NOTE: _input_ready(t) inlined (drop the sentinel count): one call less per task.
        wait[t] -= 1
        if wait[t] == 0:
            self._data_ready(t)

    def _input_ready(self, t: int) -> None:
        wait = self.task_wait
        wait[t] -= 1
        if wait[t] == 0:
            self._data_ready(t)

    def _data_ready(self, t: int) -> None:
        env = self.env
        now = env.now
        w = self.workers[self.task_worker[t]]
        node = w.node
        if self.purging[node]:
            self.deferred[node].append(t)
            return
        bit = 1 << node
        valid = self.valid
        version = self.version
        if node:
            clean = self.clean_lru[node]
            dirty = self.dirty_lru[node]
            for h, m in zip(self.task_handles[t], self.task_modes[t]):
                if m & W:
                    version[h] += 1
                    if valid[h] != bit:
                        self._set_valid(h, bit)
                    dirty.move_to_end(h)
                elif valid[h] == bit:
                    dirty.move_to_end(h)
                else:
                    clean.move_to_end(h)
        else:
            for h, m in zip(self.task_handles[t], self.task_modes[t]):
                if m & W:
                    version[h] += 1
                    if valid[h] != bit:
                        self._set_valid(h, bit)
        self.sched.on_exec_start(w, t)
        ty = self.task_type[t]
        sampler = self.type_samplers[ty][w.arch_index]
        dur = sampler() if sampler is not None else self.type_len[ty][w.arch_index]
        w.fetching = -1
        if w.is_gpu:
            if self.task_async[t]:
                start = now + self.gpu_queue_s
                if w.free_at > start:
                    start = w.free_at
            else:
                start = now if w.free_at < now else w.free_at
                w.blocked = True
        else:
            start = now
        end = start + dur
        w.free_at = end
        w.ondevice += 1
        self.task_start[t] = start
        self.task_len[t] = dur
        heappush(env.queue, (end, next(env.counter), self._exec_end, t))
        if w.is_gpu:
            self.wake(w)

    def _exec_end(self, t: int) -> None:
        env = self.env
        now = env.now
        w = self.workers[self.task_worker[t]]
        self.task_end[t] = now
        w.busy_s += self.task_len[t]
        w.ntasks += 1
        w.ondevice -= 1
        w.blocked = False
        self.finished += 1
        if now > self.makespan_s:
            self.makespan_s = now
        if self.tracing:
            self.trace_tasks.append((t, w.wid, self.task_start[t], now))
        node = w.node
        pin = self.pin[node]
        for h in self.task_handles[t]:
            pin[h] -= 1
        sched = self.sched
        sched.on_exec_end(w, t)
        # The policy sees which worker's completion releases the successors (ws pushes them to its queue).
        view = self.view
        prev = view.releasing_worker
        view.releasing_worker = w.wid
        npending = self.npending
        submit = self.submit_s
        for s in self.succs[t]:
            npending[s] -= 1
            if npending[s] == 0:
                if submit[s] > now:
                    heappush(env.queue, (submit[s], next(env.counter), self._push, s))
                else:
                    # NOTE: _push(s) inlined (the clock is ``now``): one call less per task.
                    self.task_ready[s] = now
                    sched.push(s)
        wont = self.wont_after.get(t)
        if wont is not None:
            for ht, h in wont:
                if submit[ht] > now:
                    heappush(env.queue, (submit[ht], next(env.counter), self._wont_use, h))
                else:
                    self._wont_use(h)
        view.releasing_worker = prev
        if node:
            if self.alloc_wait[node]:
                self._retry_alloc(node)
            self._unblock(node)
            dirty = len(self.dirty_lru[node])
            if (dirty + len(self.clean_lru[node])) * self.min_dirty_fraction < dirty:
                self._tidy(node)
        self.wake(w)
        if self._after_completion is not None:
            self._after_completion(w)
