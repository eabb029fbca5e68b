"""The task-based runtime (StarPU-like) simulated on the engine, on hybrid CPU-GPU nodes.

A coarse-grain simulation in the spirit of Stanisic et al., "Modeling and
simulation of a dynamic task-based runtime system for heterogeneous
multi-core architectures" (StarPU over SimGrid): the runtime's scheduling
decisions are reproduced, and kernels and transfers are replaced by delays
from a one-off calibration of the target node.

Modules (one concern each):

``engine``        tiny deterministic discrete-event kernel (heap of ``(time, seq, callback, arg)``)
``network``       fluid max-min bandwidth sharing, validated against SimGrid 3.32 (the oracle)
``platform``      memory nodes, directed links, routes, bus calibration; from StarPU files or a Machine
``starpu_files``  readers of StarPU's platform XML, bus matrices and history-based models
``perfmodel``     kernel durations (mean, normal or irregular-histogram sampling) and the provider hook
``kernel_roofline`` roofline-projected times for GPU kernels without a model (``--roofline-missing``)
``dag``           task graphs with StarPU's implicit dependencies (a builder; graphs are ``nodecast.graph.OpGraph``); the DAG JSON format
``apps``          tiled Cholesky and LU as StarPU 1.4's examples submit them
``memory``        GPU memory bookkeeping (chunks, LRU, cache, dirty counts)
``schedulers``    eager, random, ws/lws, dmda, dmdar, dmdas, heft
``runtime``       workers, data coherence, requests, transfers, overheads: ``Simulation``
``outputs``       ``SimResult`` (one run's result: summary, tables, schedule, headline) and its Chrome trace
``reference``     comparison with StarPU+SimGrid's own predictions (``ReferenceComparison``)
``sweep``         many independent simulations at once (Dask: local cluster or a scheduler address); ``SweepResult``
``setup``         the platform and kernel models from what a user names (StarPU folder, platform file, machine): ``SimSetup``

Terminal text, figures (Gantt, GFlop/s against size) and HTML pages of these
results are drawn by ``nodecast.report`` (``terminal``, ``figures``, ``html``).

Example::

    from nodecast.sim import Platform, KernelModels, cholesky, Simulation, RuntimeOptions

    sampling = "../shared/data/starpu/sampling"
    plat = Platform.from_starpu(f"{sampling}/bus/attila.platform.v4.xml")
    models = KernelModels(f"{sampling}/codelets/45", "attila")
    result = Simulation(cholesky(38400), plat, models, RuntimeOptions(scheduler="dmdas")).run()
    print(result.makespan_s, result.gflops)

The same from the command line::

    nodecast simulate cholesky --size 38400 --scheduler dmdas \\
        --starpu-dir ../shared/data/starpu/sampling --starpu-machine attila
"""

from nodecast.engine.platform import Platform
from nodecast.graph.apps import cholesky, lu
from nodecast.graph.taskgraph import TaskGraph, load_dag
from nodecast.models.history import KernelModels, KernelQuery
from nodecast.runtime.outputs import SimResult, write_chrome_trace
from nodecast.runtime.simulation import Overheads, RuntimeOptions, Simulation

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
