"""What every scheduling policy is built on: the runtime's view it sees (``SchedulerView``) and the base ``Scheduler``.

A policy receives ready tasks (``push``) and hands tasks to workers that ask
for one (``pop``); the runtime calls ``on_exec_start``/``on_exec_end`` where
StarPU calls its pre/post execution hooks, and ``after_completion`` once a
worker has finished a task and looked for work itself.

A policy sees the runtime only through its ``SchedulerView``: the workers,
the tasks' expected durations and data, where each data handle is valid,
the transfer predictions, and two actions (wake a worker, prefetch a task's
inputs). Task, data and worker ids are indexes into the view's lists.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodecast.engine.events import Environment
    from nodecast.engine.platform import Platform
    from nodecast.runtime.options import RuntimeOptions
    from nodecast.runtime.workers import Worker


@dataclass(eq=False, kw_only=True, slots=True)
class SchedulerView:
    """The part of the runtime a scheduling policy sees. Units: seconds, bytes.

    The lists and dicts are the runtime's own, read live as the simulation
    goes (a policy must not change them); the hot paths bind them to locals.

    Attributes:
        workers: the workers, by ``wid`` (``nodecast.runtime.workers.Worker``: node, arch_index, fetching,
            ondevice, pipeline, blocked...).
        options: the run's ``RuntimeOptions`` (a policy reads its own: ``seed``, ``alpha``, ``beta``, ``prefetch``).
        platform: the ``Platform`` (heft reads its uncontended link predictions and copy paths).
        clock: the event loop; ``clock.now`` is the simulated time (s).
        n_tasks: number of tasks; tasks are 0..n_tasks-1 in submission order.
        task_type: each task's type (kernel, size, footprint); ``type_len[task_type[t]][w.arch_index]`` is the
            expected (mean) duration of task ``t`` on worker ``w`` (s).
        type_len: expected duration per task type and worker architecture (s).
        task_priority: each task's priority (higher first).
        task_handles: the data handles each task accesses, in order.
        task_reads: the data handles each task reads (its inputs), in order.
        successors: each task's successors, in the order StarPU releases them.
        valid: each data handle's valid-copy mask: bit ``n`` set when memory node ``n`` holds a valid copy (node 0:
            RAM).
        requested: the copies requested and not finished, keyed ``h << 8 | node``.
        data_bytes: each data handle's size (bytes).
        transfer_estimates: ``expected_transfer_s`` values computed so far, keyed (valid mask, node, bytes); a hot
            loop reads it first and calls ``expected_transfer_s`` on a miss.
        releasing_worker: the ``wid`` whose completed task is releasing its successors now (they are being
            pushed), -1 otherwise.
        wake: ``wake(w)``: let worker ``w`` look for work now (it pops while it has room).
        prefetch: ``prefetch(t, w)``: start copying task ``t``'s inputs to ``w``'s memory node (StarPU's
            ``starpu_prefetch_task_input_for``).
        select_src: ``select_src(h, node)``: the valid copy of ``h`` a copy to ``node`` would come from (the lowest
            predicted direct transfer time), -1 when only GPUs without a peer path to ``node`` hold it.
        expected_transfer_s: ``expected_transfer_s(h, node)``: predicted time to bring ``h`` to ``node`` (s; 0 when
            valid or requested there; StarPU's ``starpu_data_expected_transfer_time``).
    """

    workers: list[Worker]
    options: RuntimeOptions
    platform: Platform
    clock: Environment = field(repr=False)
    n_tasks: int
    task_type: list[int]
    type_len: list[list[float]]
    task_priority: list[int]
    task_handles: list[tuple[int, ...]]
    task_reads: list[tuple[int, ...]]
    successors: list[list[int]]
    valid: list[int]
    requested: dict[int, object]
    data_bytes: list[int]
    transfer_estimates: dict[tuple[int, int, int], float]
    wake: Callable[[Worker], None]
    prefetch: Callable[[int, Worker], None]
    select_src: Callable[[int, int], int]
    expected_transfer_s: Callable[[int, int], float]
    releasing_worker: int = -1


class Scheduler(ABC):
    """Base policy: subclasses implement ``push`` and ``pop``; ``name`` is the name the registry gives it."""

    name = "base"

    def __init__(self, view: SchedulerView) -> None:
        self.view = view
        self.workers = view.workers

    @abstractmethod
    def push(self, t: int) -> None:
        """Task ``t`` became ready: place it (a queue, a worker)."""

    @abstractmethod
    def pop(self, w: Worker) -> int:
        """The next task for idle worker ``w``, or -1 when there is none."""

    def on_exec_start(self, w: Worker, t: int) -> None:
        """Worker ``w`` starts task ``t`` (its inputs are on its node)."""

    def on_exec_end(self, w: Worker, t: int) -> None:
        """Worker ``w`` finished task ``t`` (before its successors are released)."""

    def after_completion(self, w: Worker) -> None:
        """Called once worker ``w`` finished a task, released its successors and looked for work itself."""

    def _idle(self, w: Worker) -> bool:
        return w.fetching < 0 and not w.blocked and w.ondevice < w.pipeline


class PerWorkerFifo(Scheduler):
    """A FIFO per worker: a policy that picks the worker at push time (random, heft) assigns with ``_assign``."""

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        self.queues: list[deque[int]] = [deque() for _ in self.workers]

    def _assign(self, t: int, w: Worker, prefetch: bool) -> None:
        self.queues[w.wid].append(t)
        if prefetch and self.view.options.prefetch:
            self.view.prefetch(t, w)
        self.view.wake(w)

    def pop(self, w: Worker) -> int:
        q = self.queues[w.wid]
        return q.popleft() if q else -1
