"""The simulated runtime's workers: one per GPU (with its driver) and, optionally, CPU cores (section 4).

``workers="gpus"``: one worker per GPU, CPUs only drive them (the paper's
setting); ``workers="all"``: GPU workers plus one CPU worker per remaining core
(StarPU's default reserves one core per GPU driver). A GPU worker keeps up to
``pipeline`` kernels queued on its device.

Workers are what a scheduling policy hands tasks to
(``nodecast.runtime.schedulers``); the run loop (``nodecast.runtime.execution``)
moves their state.
"""

from __future__ import annotations

from nodecast.engine.platform import RAM, Platform
from nodecast.errors import InputError
from nodecast.runtime.options import RuntimeOptions


class Worker:
    """A processing unit: a GPU (with its driver) or a CPU core.

    Attributes:
        wid: index in the runtime's worker list.
        name, kind: ``"CUDA0"``... or ``"CPU0"``...; ``"cuda"`` or ``"cpu"`` (``is_gpu``).
        node: the memory node its tasks' data must be on (0: RAM).
        devid: the GPU's device id in the kernel models.
        arch_index: index of its architecture in the expected durations (``type_len[type][arch_index]``).
        pipeline: kernels it may have queued on its device at once.
        fetching: the task whose input it is fetching, -1 when none.
        ondevice: kernels queued or running on its device.
        free_at: when its device is free of the kernels queued so far (s).
        blocked: a synchronous kernel holds its driver.
        busy_s, ntasks: kernel time (s) and tasks run so far.
    """

    __slots__ = (
        "wid",
        "name",
        "kind",
        "node",
        "devid",
        "pipeline",
        "fetching",
        "ondevice",
        "free_at",
        "blocked",
        "busy_s",
        "ntasks",
        "arch_index",
        "is_gpu",
    )

    def __init__(self, wid: int, name: str, kind: str, node: int, devid: int, pipeline: int, arch_index: int) -> None:
        self.wid = wid
        self.name = name
        self.kind = kind
        self.is_gpu = kind == "cuda"
        self.node = node
        self.devid = devid
        self.pipeline = pipeline
        self.fetching = -1
        self.ondevice = 0
        self.free_at = 0.0
        self.blocked = False
        self.busy_s = 0.0
        self.ntasks = 0
        self.arch_index = arch_index


def make_workers(plat: Platform, opt: RuntimeOptions) -> tuple[list[Worker], list[tuple[str, int]]]:
    """The workers ``opt`` asks for on ``plat``, and their architectures ((kind, devid), each worker's ``arch_index``).

    GPU workers first, in the platform's order, then CPU workers. Raises
    InputError for a bad ``workers``, ``pipeline`` or CPU count, or when no
    worker is left to run tasks.
    """
    if opt.workers not in ("gpus", "all"):
        raise InputError(f"workers must be 'gpus' or 'all' (got {opt.workers!r})", key="--workers")
    if opt.pipeline < 0:
        raise InputError(f"pipeline must be >= 0 (got {opt.pipeline})", key="--pipeline")
    if opt.n_cpu_workers is not None and opt.n_cpu_workers < 0:
        raise InputError(f"CPU workers must be >= 0 (got {opt.n_cpu_workers})", key="--ncpus")
    workers: list[Worker] = []
    arches: list[tuple[str, int]] = []
    for g in plat.gpu_nodes:
        arch = ("cuda", plat.model_devid[g])
        if arch not in arches:
            arches.append(arch)
        workers.append(
            Worker(len(workers), plat.node_names[g], "cuda", g, plat.model_devid[g], max(1, opt.pipeline), arches.index(arch))
        )
    if opt.workers == "all":
        ncpu = opt.n_cpu_workers if opt.n_cpu_workers is not None else max(0, plat.n_cpus - len(plat.gpu_nodes))
        if ncpu:
            arches.append(("cpu", 0))
        for i in range(ncpu):
            workers.append(Worker(len(workers), f"CPU{i}", "cpu", RAM, 0, 1, len(arches) - 1))
    if not workers:
        raise InputError("no worker to run tasks (the platform has no GPU and no CPU worker was requested)", key="--workers")
    return workers, arches
