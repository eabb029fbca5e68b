"""How the simulated runtime behaves: its options and overheads (StarPU 1.4's defaults).

``RuntimeOptions`` is what a user chooses (scheduler, workers, pipeline,
prefetch, bandwidth sharing, limits); ``Overheads`` the runtime's own costs in
seconds, after Table 2 of Stanisic et al. Both are plain values: the
simulation (``nodecast.runtime.simulation``) reads them, the result
(``nodecast.runtime.outputs``) records them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_MIB = 1 << 20


@dataclass(frozen=True)
class Overheads:
    """Runtime overheads in seconds (the paper's Table 2, with StarPU 1.4's simulated values).

    Table 2 lists transfer-queue management 10 µs, cudaMalloc 175 µs, cudaFree
    125 µs and pinned host allocation 650 µs/MB. StarPU 1.4's simulation charges
    10 µs per transfer and per queued GPU kernel, 175 µs per cudaMalloc and
    750 µs per cudaFree (both under one global lock), 1 µs per task submission,
    650 µs/MiB for pinned host memory (not used by these applications, whose
    matrix is registered, not allocated, in simulation).
    """

    task_submit_s: float = 1e-6
    transfer_queue_s: float = 10e-6
    gpu_queue_s: float = 10e-6
    cuda_malloc_s: float = 175e-6
    cuda_free_s: float = 750e-6
    pinned_alloc_s_per_byte: float = 650e-6 / _MIB

    @classmethod
    def none(cls) -> Overheads:
        """No runtime overhead at all (the paper's "naive" simulation of Fig. 1)."""
        return cls(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass
class RuntimeOptions:
    """How the runtime behaves. Defaults follow StarPU 1.4.

    Attributes:
        scheduler: policy name (``nodecast.runtime.schedulers.SCHEDULERS``).
        workers: ``"gpus"`` (CPUs only drive GPUs, the paper's setting) or
            ``"all"`` (CPU workers too).
        n_cpu_workers: CPU workers with ``workers="all"`` (default: cores minus
            one per GPU, as StarPU reserves a core per GPU driver).
        pipeline: kernels a GPU worker may have queued on its device
            (``STARPU_CUDA_PIPELINE``, 2); 0 makes every kernel synchronous.
        prefetch: prefetch inputs when a task is assigned (dmda family, random, heft).
        sharing: ``"maxmin"`` or ``"cm02"`` bandwidth sharing (``nodecast.engine.network``).
        overheads: runtime overheads (Table 2).
        seed: seed of the random policy (kernel sampling has its own, in ``KernelModels``).
        trace: record every task, transfer and eviction (for traces and Gantt charts).
        alpha, beta: dmda's weights of termination time and transfer time.
        max_requests, max_prefetch_requests, max_idle_requests: StarPU's limits
            on requests in flight per channel (handling node, peer node, direction).
        min_clean_fraction, target_clean_fraction: StarPU's minimum and target
            share of clean chunks per GPU (5 % and 10 %).
        gpu_memory_margin: share of GPU memory StarPU uses (``FREE_MARGIN``, 0.9,
            counted in whole MiB); None uses the platform's memory as is.
    """

    scheduler: str = "dmda"
    workers: str = "gpus"
    n_cpu_workers: int | None = None
    pipeline: int = 2
    prefetch: bool = True
    sharing: str = "maxmin"
    overheads: Overheads = field(default_factory=Overheads)
    seed: int = 0
    trace: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    max_requests: int = 20
    max_prefetch_requests: int = 10
    max_idle_requests: int = 1
    min_clean_fraction: float = 0.05
    target_clean_fraction: float = 0.10
    gpu_memory_margin: float | None = 0.9
