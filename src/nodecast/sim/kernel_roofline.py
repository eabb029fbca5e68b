"""Roofline-projected durations for GPU kernels that have no performance model.

StarPU's history models cover the kernels, devices and data sizes that were
calibrated; a task graph may hold others (a DAG file's own kernels, a block
size never run). When asked for, such a kernel gets the time the roofline
model allows on the GPU that runs it, eq. 1 of the hierarchical-roofline
paper at the DRAM level with the GPU's maxima::

    t = max(F / P_FMA,p , B / BW_DRAM)

with F the task's FLOP count (the DAG's ``flops``; the applications' nominal
counts), p its precision, B the bytes it accesses (the task's ``size_bytes``:
every handle read or written once from DRAM) and the maxima of
``nodecast.models.roofline.gpu_figures`` (measured values from a calibrated
machine file, else the data sheet). This is the fastest the kernel can run:
no kernel reaches both peaks, so it is a lower bound on the real time, and a
simulation using it is optimistic for those kernels. ``KernelModels`` lists
each projected kernel in the simulation's notes with its time and the
figures used (``label``).

CPU kernels get no projection (there is no CPU roofline here): a CPU worker
asked to run a kernel without a model still raises the model error.
"""

from __future__ import annotations

from nodecast.errors import InputError
from nodecast.models.roofline import GpuFigures
from nodecast.sim.perfmodel import KernelQuery

#: Precision names of the applications (``--precision``) and the roofline model's.
PRECISIONS = {"single": "fp32", "double": "fp64", "fp32": "fp32", "fp64": "fp64", "fp16": "fp16", "bf16": "bf16"}


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
        self.peak_flops = figures.peak(self.precision, "fma", "roofline-projected kernel times")
        self.dram_bps = figures.bw("dram", "roofline-projected kernel times")
        self.label = (
            f"roofline max(F / P_FMA, B / BW_DRAM) on {figures.model}, {self.precision.upper()} FMA peak "
            f"{self.peak_flops / 1e12:.2f} TFLOP/s ({figures.origin.get('fma.' + self.precision, '?')}), DRAM "
            f"{self.dram_bps / 1e9:.0f} GB/s ({figures.origin.get('bw.dram', '?')}); a lower bound on the real time"
        )

    def __call__(self, query: KernelQuery) -> float | None:
        """The projected time (s) of ``query`` on this GPU, or None for a CPU kernel or one with no work."""
        if query.arch_kind != "cuda" or (query.flops <= 0 and query.size_bytes <= 0):
            return None
        return max(query.flops / self.peak_flops, query.size_bytes / self.dram_bps)
