"""Roofline-projected kernel durations in the simulator: for kernels without a model, and from one GPU to another.

StarPU's history models cover the kernels, devices and data sizes that were
calibrated; a task graph may hold others (a DAG file's own kernels, a block
size never run). When asked for, such a kernel gets the time the roofline
model allows on the GPU that runs it, eq. 1 of the hierarchical-roofline
paper at the DRAM level with the GPU's maxima (``roofline_bound.bound_time_s``,
the bound the ``plain-roofline`` baseline takes too)::

    t = max(F / P_FMA,p , B / BW_DRAM)

with F the task's FLOP count (the DAG's ``flops``; the applications' nominal
counts), p its precision, B the bytes it accesses (the task's ``size_bytes``:
every handle read or written once from DRAM) and the maxima of
``roofline_figures.gpu_figures`` (measured values from a calibrated
machine file, else the data sheet). This is the fastest the kernel can run:
no kernel reaches both peaks, so it is a lower bound on the real time, and a
simulation using it is optimistic for those kernels. ``KernelModels`` lists
each projected kernel in the simulation's notes with its time and the
figures used (``label``).

CPU kernels get no projection (there is no CPU roofline here): a CPU worker
asked to run a kernel without a model still raises the model error.

``RooflineRatio`` carries StarPU's *measured* durations from the GPU they were
calibrated on to another one, by the ratio of the two roofline times (the
``plain-roofline`` baseline of ``kernel_baselines``)::

    t_target = t_measured x max(F / P_t, B / BW_t) / max(F / P_s, B / BW_s)

which keeps the kernel's measured efficiency and assumes it stays the same on
the target, the assumption that model makes too.

In the registry they are two task-kernel models (``nodecast.models.task_kernel``):
``roofline-missing`` (``--roofline-missing``, role ``"fallback"``) and
``roofline-ratio`` (``--kernels-measured-on``, role ``"scale"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.roofline_bound import bound_time_s
from nodecast.models.roofline_figures import GpuFigures, gpu_figures
from nodecast.models.task_kernel import TASK_KERNEL, KernelQuery, TaskKernelRequest

#: Precision names of the applications (``--precision``) and the roofline model's.
PRECISIONS = {"single": "fp32", "double": "fp64", "fp32": "fp32", "fp64": "fp64", "fp16": "fp16", "bf16": "bf16"}
#: What the GPU figures are needed by, in the error a missing one raises.
NEEDED_BY = "roofline-projected kernel times"


class RooflineKernelTimes:
    """A kernel-time fallback: ``max(F / P_FMA, B / BW_DRAM)`` on one GPU model (seconds).

    Args:
        figures: the GPU's maxima (FLOP/s, bytes/s), e.g. ``gpu_figures(machine)``.
        precision: ``"single"``/``"fp32"``, ``"double"``/``"fp64"``, ``"fp16"`` or ``"bf16"``.

    Raises InputError at construction when the figures lack the precision's FMA
    peak or the DRAM bandwidth (naming the machine file key to add).
    """

    def __init__(self, figures: GpuFigures, precision: str = "single") -> None:
        if precision not in PRECISIONS:
            raise InputError(f"unknown precision {precision!r}", key="--precision", hint=f"Use one of {', '.join(PRECISIONS)}")
        self.figures = figures
        self.precision = PRECISIONS[precision]
        self.peak_flops = figures.peak(self.precision, "fma", NEEDED_BY)
        self.dram_bps = figures.bw("dram", NEEDED_BY)
        self.label = (
            f"roofline max(F / P_FMA, B / BW_DRAM) on {figures.model}, {self.precision.upper()} FMA peak "
            f"{self.peak_flops / 1e12:.2f} TFLOP/s ({figures.origin.get('fma.' + self.precision, '?')}), DRAM "
            f"{self.dram_bps / 1e9:.0f} GB/s ({figures.origin.get('bw.dram', '?')}); a lower bound on the real time"
        )

    def __call__(self, query: KernelQuery) -> float | None:
        """The projected time (s) of ``query`` on this GPU, or None for a CPU kernel or one with no work."""
        if query.arch_kind != "cuda" or (query.flops <= 0 and query.size_bytes <= 0):
            return None
        return self.bound_s(query)

    def bound_s(self, query: KernelQuery) -> float:
        """The roofline bound (s) of the task's bytes and FLOP of this precision on this GPU."""
        return float(bound_time_s(query.size_bytes, {self.precision: query.flops}, self.figures, NEEDED_BY))


class RooflineRatio:
    """A kernel-time scale: ``roofline_target / roofline_source`` for GPU kernels, 1 for CPU kernels.

    Args:
        source: maxima of the GPU the kernel models were measured on.
        target: maxima of the GPU that runs the simulated kernels.
        precision: as for ``RooflineKernelTimes``.
    """

    def __init__(self, source: GpuFigures, target: GpuFigures, precision: str = "single") -> None:
        self.source = RooflineKernelTimes(source, precision)
        self.target = RooflineKernelTimes(target, precision)
        s, t = self.source, self.target
        self.label = (
            f"measured on {source.model}, scaled to {target.model} by the roofline ratio "
            f"max(F / P_FMA, B / BW_DRAM): {s.precision.upper()} FMA {s.peak_flops / 1e12:.3g} -> {t.peak_flops / 1e12:.3g} TFLOP/s, "
            f"DRAM {s.dram_bps / 1e9:.0f} -> {t.dram_bps / 1e9:.0f} GB/s"
        )

    def __call__(self, query: KernelQuery) -> float:
        """The factor (dimensionless) that turns the measured duration of ``query`` into the target's."""
        if query.arch_kind != "cuda" or (query.flops <= 0 and query.size_bytes <= 0):
            return 1.0
        return self.target.bound_s(query) / self.source.bound_s(query)


class RooflineMissingModel:
    """The roofline bound on the simulated GPU for GPU kernels without a measurement (``--roofline-missing``)."""

    name: ClassVar[str] = "roofline-missing"
    kind: ClassVar[str] = TASK_KERNEL
    baseline: ClassVar[bool] = False
    role: ClassVar[str] = "fallback"
    description: ClassVar[str] = ("--roofline-missing: a GPU kernel without a measurement takes "
                                  "max(F / P_FMA, B / BW_DRAM) on the simulated GPU (a lower bound)")

    def build(self, request: TaskKernelRequest) -> RooflineKernelTimes | None:
        """The fallback on ``request.target`` (given with ``roofline_missing``), None when not asked for."""
        if not request.roofline_missing:
            return None
        return RooflineKernelTimes(request.target, request.precision)  # type: ignore[arg-type]


class RooflineRatioModel:
    """Measured times scaled from the GPU they were measured on to the simulated one (``--kernels-measured-on``)."""

    name: ClassVar[str] = "roofline-ratio"
    kind: ClassVar[str] = TASK_KERNEL
    baseline: ClassVar[bool] = False
    role: ClassVar[str] = "scale"
    description: ClassVar[str] = ("--kernels-measured-on: measured times x max(F / P_FMA, B / BW_DRAM) on the "
                                  "simulated GPU / the same on the GPU they were measured on")

    def build(self, request: TaskKernelRequest) -> Callable[[KernelQuery], float] | None:
        """The scale from the GPU of the machine ``request.measured_on`` to ``request.target``, None when not asked
        for."""
        if request.measured_on is None:
            return None
        source = gpu_figures(load_machine(request.measured_on))
        return RooflineRatio(source, request.target, request.precision)  # type: ignore[arg-type]
