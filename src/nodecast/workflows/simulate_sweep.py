"""Many independent simulations at once: size sweeps, scheduler sweeps, reference comparisons.

Each simulation is single-threaded and independent of the others, so a sweep
scales with processes: sweeps run on Dask distributed through
``workflows.parallel`` (a ``LocalCluster`` of single-threaded worker
processes, or an existing Dask scheduler at ``address``; with one job, or one
case, everything runs in this process and Dask is not imported). Dask is the
``parallel`` extra: without it the automatic choice runs every case here, and
an explicit job count above 1 or a scheduler address is one ``InputError``
naming the extra (``parallel.require_dask``), raised before any case runs.

Results do not depend on where or in which order cases run: every case
builds its own task graph and its own runtime, and a simulation draws kernel
durations from a generator of its own (``KernelModels.generator``). Results
come back in the order of ``cases``.

Cases may run on different machines: a case's ``machine`` picks its
platform and kernel models from the sweep's ``machines``. Each platform and
its models travel to the workers once (``scatter``); workers need nodecast
installed, and the same version as the client.

With ``keep_going``, a case whose simulation raises an ``InputError`` (a
kernel without a model on its machine...) gives ``{"error": message}``
instead of stopping the sweep, on Dask workers as in this process.

``run_sweep`` runs one application over matrix sizes and schedulers (or a
DAG over schedulers) and returns a ``SweepResult``, the result model of
``nodecast simulate --sizes`` and of a scheduler list.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nodecast import extras
from nodecast.errors import InputError
from nodecast.graph.apps import APPS, task_count
from nodecast.graph.opgraph import OpGraph
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.headline import Number
from nodecast.progress import JobDone
from nodecast.runtime.simulation import RuntimeOptions, Simulation
from nodecast.workflows import parallel
from nodecast.workflows.parallel import default_jobs, require_dask

#: Without an explicit job count, a sweep starts a local cluster only when it simulates at
#: least this many tasks in all: a cluster takes seconds to start, about what one process
#: simulates of 50,000 tasks on a 2-core machine.
AUTO_PARALLEL_TASKS = 100_000


@dataclass(frozen=True)
class Case:
    """One simulation of a sweep.

    Attributes:
        options: the runtime options (scheduler, workers...).
        app: ``"cholesky"`` or ``"lu"``; None runs the sweep's own ``graph``.
        matrix_size: elements per side (built-in applications).
        block_size: tile size in elements.
        precision: ``"single"`` or ``"double"``.
        machine: key of the sweep's ``machines`` whose platform and kernel
            models this case runs on; None: the sweep's own platform and models.
    """

    options: RuntimeOptions
    app: str | None = None
    matrix_size: int | None = None
    block_size: int = 960
    precision: str = "single"
    machine: str | None = None

    def n_tasks(self) -> int:
        """Tasks this case simulates (built-in applications; 0 for a DAG case, whose graph the sweep holds)."""
        if self.matrix_size is None or self.app is None:
            return 0
        return task_count(self.app, self.matrix_size // self.block_size)


def run_case(case: Case, platform: Platform, models: KernelModels, graph: OpGraph | None = None) -> dict[str, Any]:
    """Simulate one case; returns its summary (plain values only, cheap to send between processes).

    Keys: ``tasks``, ``makespan_s``, ``gflops``, ``evictions``, ``purges``,
    ``events``, ``wall_s`` (seconds this simulation took, graph building included).
    """
    t0 = time.perf_counter()
    if case.app is not None:
        graph = APPS[case.app](case.matrix_size, case.block_size, precision=case.precision)
    if graph is None:
        msg = "a case without an application needs the sweep's task graph"
        raise ValueError(msg)
    res = Simulation(graph, platform, models, case.options).run()
    return {
        "tasks": res.n_tasks,
        "makespan_s": res.makespan_s,
        "gflops": res.gflops,
        "evictions": res.evictions,
        "purges": res.purges,
        "events": res.events,
        "wall_s": time.perf_counter() - t0,
    }


def run_case_or_error(case: Case, platform: Platform, models: KernelModels, graph: OpGraph | None = None) -> dict[str, Any]:
    """``run_case``, or ``{"error": message}`` when the simulation raises an InputError (the case cannot run as given)."""
    try:
        return run_case(case, platform, models, graph)
    except InputError as exc:
        return {"error": exc.message}


def run_cases(
    cases: Sequence[Case],
    platform: Platform | None,
    models: KernelModels | None,
    *,
    graph: OpGraph | None = None,
    jobs: int | None = None,
    address: str | None = None,
    progress: JobDone | None = None,
    machines: Mapping[str, tuple[Platform, KernelModels]] | None = None,
    keep_going: bool = False,
) -> list[dict[str, Any]]:
    """Run every case and return their summaries in the order of ``cases``.

    Args:
        jobs: simulations at once on a local Dask cluster; 1 runs them one
            after the other in this process. Default: one per CPU core when
            the sweep simulates at least ``AUTO_PARALLEL_TASKS`` tasks in
            all, else 1.
        address: a running Dask scheduler to use instead of a local cluster.
        progress: called with the index of each case as it finishes.
        machines: {name: (platform, kernel models)} for the cases whose
            ``machine`` is set; ``platform`` and ``models`` serve the others
            (None when every case names its machine).
        keep_going: a case whose simulation raises an InputError gives
            ``{"error": message}`` and the other cases still run.

    Raises whatever a simulation raises (an ``InputError`` keeps its message
    across processes; with ``keep_going``, only errors that are not an
    ``InputError``); the cluster is shut down either way.
    """
    if jobs is not None and jobs < 1:
        msg = f"jobs must be >= 1 (got {jobs})"
        raise ValueError(msg)
    setups = _setups(cases, platform, models, machines or {})
    run = run_case_or_error if keep_going else run_case
    n = len(cases)
    if jobs is None:
        total = sum(c.n_tasks() if c.app is not None else (len(graph) if graph is not None else 0) for c in cases)
        jobs = default_jobs() if total >= AUTO_PARALLEL_TASKS and extras.installed("distributed") else 1
    if parallel.runs_here(jobs, n, address):
        return parallel.run_here(lambda i: run(cases[i], *setups[cases[i].machine], graph), n, progress)
    require_dask(address)
    return _run_on_dask(cases, setups, run, graph, min(jobs, n), address, progress)


def _setups(cases, platform, models, machines) -> dict[str | None, tuple[Platform, KernelModels]]:
    """{case.machine: (platform, models)} for every machine the cases use (None: the sweep's own)."""
    out: dict[str | None, tuple[Platform, KernelModels]] = {}
    for case in cases:
        if case.machine in out:
            continue
        if case.machine is None:
            out[None] = (platform, models)
        elif case.machine in machines:
            out[case.machine] = machines[case.machine]
        else:
            msg = f"no platform and models for machine {case.machine!r} (machines given: {', '.join(machines) or 'none'})"
            raise ValueError(msg)
    return out


def _run_on_dask(cases, setups, run, graph, jobs, address, progress) -> list[dict[str, Any]]:
    """The cases on Dask (``parallel.run_on_dask``): each platform and its models, and the sweep's graph, sent to
    the workers once; the biggest case first (longest-processing-time order)."""
    shared: dict[Any, list[Any]] = {("machine", key): list(pair) for key, pair in setups.items()}
    if graph is not None:
        shared["graph"] = [graph]

    def args(i: int, sent: Mapping[Any, list[Any]]) -> tuple[Any, ...]:
        return (cases[i], *sent[("machine", cases[i].machine)], *sent.get("graph", []))

    order = sorted(range(len(cases)), key=lambda i: (-cases[i].n_tasks(), i))
    return parallel.run_on_dask(run, len(cases), args, shared=shared, jobs=jobs, address=address, progress=progress,
                                order=order, name="nodecast-case")


@dataclass
class SweepResult:
    """Runs of one application over matrix sizes and schedulers (or of one DAG over schedulers) on one platform.

    ``rows`` hold one dict per run, in the order asked (sizes, then
    schedulers within a size): ``app`` (None for a DAG), ``matrix_size``
    (elements per side; None for a DAG), ``scheduler``, ``tasks``,
    ``makespan_s`` (simulated seconds), ``gflops`` (nominal GFlop/s of
    simulated time, rounded to 3 decimals as the CSV and JSON files hold it),
    ``evictions``, ``purges``.
    """

    rows: list[dict[str, Any]]
    platform: str
    app: str | None
    precision: str = "single"
    block_size: int = 960
    workers: str = "gpus"
    graph_name: str | None = None

    @property
    def title(self) -> str:
        """What was swept, on what: ``cholesky (single, block 960) on attila, workers=gpus``."""
        return f"{self.app} ({self.precision}, block {self.block_size}) on {self.platform}, workers={self.workers}"

    def table(self) -> Any:
        """The rows as a DataFrame (columns as in ``rows``)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["app", "matrix_size", "scheduler", "tasks", "makespan_s", "gflops",
                                                "evictions", "purges"])

    def best(self) -> dict[str, Any]:
        """The run with the highest GFlop/s; for a DAG without a flop count, the one with the shortest makespan."""
        if any(r["gflops"] > 0 for r in self.rows):
            return max(self.rows, key=lambda r: r["gflops"])
        return min(self.rows, key=lambda r: r["makespan_s"])

    def headline(self) -> list[Number]:
        """The best run's GFlop/s (as flop/s) and makespan (s), saying which size and scheduler it is."""
        b = self.best()
        where = (f"{b['app']} {b['matrix_size']}, " if b["matrix_size"] is not None else f"{self.graph_name or 'DAG'}, ")
        where += f"{b['scheduler']}; best of {len(self.rows)} runs"
        return [Number("highest performance (nominal)", b["gflops"] * 1e9, "flop/s", note=where),
                Number("makespan of that run", b["makespan_s"], "s", note=f"{b['tasks']:,} tasks on {self.platform}")]


def run_sweep(
    options: RuntimeOptions,
    platform: Platform,
    models: KernelModels,
    *,
    app: str | None = None,
    sizes: Sequence[int | None] = (None,),
    schedulers: Sequence[str] = ("dmda",),
    block_size: int = 960,
    precision: str = "single",
    graph: OpGraph | None = None,
    jobs: int | None = None,
    address: str | None = None,
    progress: JobDone | None = None,
) -> SweepResult:
    """Simulate ``app`` at every size with every scheduler (``graph``, a DAG, with every scheduler when ``app`` is None).

    ``options`` gives everything but the scheduler (and no trace is
    recorded). Runs go through ``run_cases`` (``jobs``, ``address``,
    ``progress`` as there); the rows come back in the order of sizes, then
    schedulers.
    """
    cases = [Case(replace(options, scheduler=sched, trace=False), app, size, block_size, precision)
             for size in sizes for sched in schedulers]
    results = run_cases(cases, platform, models, graph=graph, jobs=jobs, address=address, progress=progress)
    rows = [
        {
            "app": app,
            "matrix_size": case.matrix_size,
            "scheduler": case.options.scheduler,
            "tasks": res["tasks"],
            "makespan_s": res["makespan_s"],
            "gflops": round(res["gflops"], 3),
            "evictions": res["evictions"],
            "purges": res["purges"],
        }
        for case, res in zip(cases, results, strict=True)
    ]
    graph_name = graph.tasks.name if graph is not None and app is None else None
    return SweepResult(rows, platform.name, app, precision, block_size, options.workers, graph_name)
