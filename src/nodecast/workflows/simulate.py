"""Simulate one run of a task-based application on a node: ``simulate(...) -> SimResult``.

The one-call form of what ``nodecast simulate`` does for a single run: build the task graph (a built-in application
or a DAG file), the platform and kernel models (from StarPU's calibration files or a nodecast machine, as
``cost.tasks.SimSetup`` says), and run the StarPU-like runtime (``runtime.simulation``) on them. Size and
scheduler sweeps and the comparison with StarPU+SimGrid's own predictions are ``workflows.simulate_sweep`` and
``workflows.simulate_reference``. Units: bytes and seconds.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from nodecast.cost.tasks import SimSetup
from nodecast.errors import InputError
from nodecast.graph.apps import APPS
from nodecast.graph.opgraph import OpGraph
from nodecast.graph.taskgraph import load_dag
from nodecast.runtime.options import RuntimeOptions
from nodecast.runtime.outputs import SimResult
from nodecast.runtime.setup import platform_and_models
from nodecast.runtime.simulation import Simulation


#: The SimSetup fields that name files or folders.
_PATH_FIELDS = ("starpu_dir", "platform_file", "samples")


def task_graph(app: str | OpGraph | os.PathLike[str], size: int | None = None, block_size: int = 960,
               precision: str = "single") -> OpGraph:
    """The graph to simulate: ``app`` as a built-in application (``"cholesky"``, ``"lu"``: ``size`` elements per side,
    ``block_size``-element tiles), a DAG file (JSON, ``graph.taskgraph``), or an OpGraph given as is."""
    if isinstance(app, OpGraph):
        return app
    if isinstance(app, str) and app in APPS:
        if size is None:
            raise InputError(f"no matrix size given for {app}", key="size", hint=f"Use simulate({app!r}, size=N)")
        return APPS[app](size, block_size, precision=precision)
    path = Path(app)
    if path.suffix.lower() != ".json" and not path.exists():
        raise InputError(f"no application {str(app)!r}", hint=f"Use one of {', '.join(APPS)}, or a DAG file (JSON)")
    return load_dag(path)


def simulate(app: str | OpGraph | os.PathLike[str], size: int | None = None, *, scheduler: str = "dmda",
             block_size: int = 960, precision: str = "single", setup: SimSetup | None = None,
             options: RuntimeOptions | None = None, trace: bool = False) -> SimResult:
    """Simulate ``app`` once on the node ``setup`` describes; returns its ``SimResult`` (makespan, GFlop/s, tables).

    ``setup``: where the platform and kernel models come from (StarPU's 'sampling' folder and machine, a platform
    file or a nodecast machine, and the what-ifs); None reads ``$NODECAST_STARPU_DIR`` as the command does.
    ``options``: the runtime's options; None is StarPU's defaults with ``scheduler`` (``runtime.schedulers``'
    registry names them). ``trace``: keep every task's and copy's start and end (``SimResult.schedule()``).

    Example::

        from nodecast import simulate
        from nodecast.cost.tasks import SimSetup

        setup = SimSetup(starpu_dir="../shared/data/starpu/sampling", starpu_machine="attila")
        result = simulate("cholesky", 38400, scheduler="dmdas", setup=setup)
        print(result.makespan_s, result.gflops)
    """
    setup = setup if setup is not None else SimSetup(precision=precision)
    # Paths may be given as text, as people type them.
    setup = replace(setup, **{f: Path(v) for f in _PATH_FIELDS if isinstance(v := getattr(setup, f), str)})
    if setup.precision != precision and setup.precision == SimSetup().precision:
        setup = replace(setup, precision=precision)  # one precision for the graph and the roofline's peak
    options = options if options is not None else RuntimeOptions(scheduler=scheduler)
    if trace and not options.trace:
        options = replace(options, trace=True)
    graph = task_graph(app, size, block_size, precision)
    platform, models = platform_and_models(setup)
    return Simulation(graph, platform, models, options).run()
