"""The scheduling policies: each sees the runtime only through a ``SchedulerView``, and the registry is the one list."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import pytest

from nodecast.runtime.options import RuntimeOptions
from nodecast.runtime.schedulers import SCHEDULERS, Scheduler, SchedulerView, make_scheduler
from nodecast.runtime.workers import Worker


def _view(scheduler: str, n_tasks: int, woken: list) -> SchedulerView:
    """A view of two GPUs and ``n_tasks`` independent tasks of one type (1 s on either GPU) whose one input is
    valid on every node: no Simulation behind it."""
    workers = [Worker(0, "CUDA0", "cuda", 1, 0, 2, 0), Worker(1, "CUDA1", "cuda", 2, 1, 2, 1)]
    return SchedulerView(
        workers=workers, options=RuntimeOptions(scheduler=scheduler), platform=None, clock=SimpleNamespace(now=0.0),
        n_tasks=n_tasks, task_type=[0] * n_tasks, type_len=[[1.0, 1.0]], task_priority=[0] * n_tasks,
        task_handles=[(0,)] * n_tasks, task_reads=[(0,)] * n_tasks, successors=[[] for _ in range(n_tasks)],
        valid=[0b111], requested={}, data_bytes=[1024], transfer_estimates={}, wake=woken.append,
        prefetch=lambda t, w: None, select_src=lambda h, node: 0, expected_transfer_s=lambda h, node: 0.0,
    )


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_every_registered_policy_runs_on_a_view_alone(name):
    """Each policy places and hands out tasks with nothing but a hand-made view: it needs no Simulation."""
    woken: list = []
    view = _view(name, 5, woken)
    policy = make_scheduler(name, view)
    for t in range(5):
        policy.push(t)
    popped = []
    while True:
        got = [policy.pop(w) for w in view.workers]
        if all(t < 0 for t in got):
            break
        popped += [t for t in got if t >= 0]
    assert sorted(popped) == [0, 1, 2, 3, 4]
    assert woken  # a push lets some worker look for work


class Lifo(Scheduler):
    """A toy policy: one central stack, the newest ready task first."""

    name = "lifo"

    def __init__(self, view: SchedulerView) -> None:
        super().__init__(view)
        self.stack: deque[int] = deque()

    def push(self, t: int) -> None:
        self.stack.append(t)
        for w in self.workers:
            if self._idle(w):
                self.view.wake(w)

    def pop(self, w: Worker) -> int:
        return self.stack.pop() if self.stack else -1


@pytest.mark.shared
def test_a_new_policy_is_one_class_and_one_registry_entry(starpu_data, monkeypatch):
    """A policy added to the registry runs a whole graph: every task once, after its predecessors."""
    from nodecast.engine.platform import Platform
    from nodecast.graph.apps import cholesky
    from nodecast.models.history import KernelModels
    from nodecast.runtime.simulation import Simulation

    monkeypatch.setitem(SCHEDULERS, "lifo", Lifo)
    plat = Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")
    models = KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila")
    graph = cholesky(960 * 4)
    res = Simulation(graph, plat, models, RuntimeOptions(scheduler="lifo", trace=True)).run()
    assert res.scheduler == "lifo" and res.n_tasks == len(graph) == len(res.trace["tasks"])
    start = {t["task"]: t["start_s"] for t in res.trace["tasks"]}
    end = {t["task"]: t["end_s"] for t in res.trace["tasks"]}
    assert all(end[graph.names[p]] <= start[graph.names[t]] + 1e-12 for t in range(len(graph)) for p in graph.preds(t))
