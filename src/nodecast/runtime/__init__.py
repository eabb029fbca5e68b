"""The task-based runtime (StarPU-like) simulated on the engine, on hybrid CPU-GPU nodes.

A coarse-grain simulation in the spirit of Stanisic et al., "Modeling and
simulation of a dynamic task-based runtime system for heterogeneous
multi-core architectures" (StarPU over SimGrid): the runtime's scheduling
decisions are reproduced, and kernels and transfers are replaced by delays
from a one-off calibration of the target node.

Modules (one concern each):

``simulation``    ``Simulation``: sets up the shared state and runs the loop; puts the modules below together
``options``       ``RuntimeOptions`` and ``Overheads`` (Table 2)
``workers``       the workers (GPUs with their drivers, CPU cores)
``execution``     tasks: pushed to the scheduler, inputs fetched, kernels run, successors released
``schedulers``    one policy per file (eager, random, ws/lws, dmda/dmdar/dmdas, heft), the ``SchedulerView`` they
                  see, and the registry ``SCHEDULERS``
``coherence``     valid copies per data handle and node, clean/dirty order, wont_use, transfer predictions
``requests``      copy requests, queued per channel within StarPU's in-flight limits
``allocation``    GPU memory: chunk reuse, eviction, purges (with ``memory``: the per-GPU bookkeeping)
``transfers``     StarPU's stream rules, then the fluid network (``nodecast.engine.network``)
``outputs``       ``SimResult`` (one run's result: summary, tables, schedule, headline) and its Chrome trace
``setup``         the platform and kernel models from what a user names (StarPU folder, platform file, machine)

The engine below (``nodecast.engine``: event kernel, fluid network,
platform), task graphs and applications (``nodecast.graph``) and kernel
models (``nodecast.models``) are shared with the rest of nodecast; sweeps and
the comparison with StarPU+SimGrid are workflows
(``nodecast.workflows.simulate_sweep``, ``simulate_reference``).

Terminal text, figures (Gantt, GFlop/s against size) and HTML pages of these
results are drawn by ``nodecast.report`` (``terminal``, ``figures``, ``html``).

Example::

    from nodecast.runtime import Platform, KernelModels, cholesky, Simulation, RuntimeOptions

    sampling = "../shared/data/starpu/sampling"
    plat = Platform.from_starpu(f"{sampling}/bus/attila.platform.v4.xml")
    models = KernelModels(f"{sampling}/codelets/45", "attila")
    result = Simulation(cholesky(38400), plat, models, RuntimeOptions(scheduler="dmdas")).run()
    print(result.makespan_s, result.gflops)

The same from the command line::

    nodecast simulate cholesky --size 38400 --scheduler dmdas \\
        --starpu-dir ../shared/data/starpu/sampling --starpu-machine attila
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodecast.engine.platform import Platform
    from nodecast.graph.apps import cholesky, lu
    from nodecast.graph.taskgraph import TaskGraph, load_dag
    from nodecast.models.history import KernelModels, KernelQuery
    from nodecast.runtime.options import Overheads, RuntimeOptions
    from nodecast.runtime.outputs import SimResult, write_chrome_trace
    from nodecast.runtime.simulation import Simulation

#: Name -> the module it comes from. NOTE: imported on first use, not with the package: ``nodecast simulate``
#: reads the scheduler registry (``nodecast.runtime.schedulers``) to build its help, which must not load the whole
#: runtime at every start of the command line.
_EXPORTS = {
    "KernelModels": "nodecast.models.history",
    "KernelQuery": "nodecast.models.history",
    "Overheads": "nodecast.runtime.options",
    "Platform": "nodecast.engine.platform",
    "RuntimeOptions": "nodecast.runtime.options",
    "SimResult": "nodecast.runtime.outputs",
    "Simulation": "nodecast.runtime.simulation",
    "TaskGraph": "nodecast.graph.taskgraph",
    "cholesky": "nodecast.graph.apps",
    "load_dag": "nodecast.graph.taskgraph",
    "lu": "nodecast.graph.apps",
    "write_chrome_trace": "nodecast.runtime.outputs",
}

__all__ = [
    "KernelModels",
    "KernelQuery",
    "Overheads",
    "Platform",
    "RuntimeOptions",
    "SimResult",
    "Simulation",
    "TaskGraph",
    "cholesky",
    "load_dag",
    "lu",
    "write_chrome_trace",
]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nodecast.runtime' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
