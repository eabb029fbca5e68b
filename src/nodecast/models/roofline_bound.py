"""The plain roofline bound: the least time a kernel can take on a GPU at its maxima, DRAM level only.

Eq. 1 of the hierarchical-roofline paper (Van Lanker et al., Euro-Par 2024) with the GPU's maxima and no
kernel-specific ceilings::

    t = max(N_DRAM / BW_DRAM, sum_p FLOP_p / P_FMA,p)

with N_DRAM the bytes a kernel moves from DRAM, FLOP_p its floating-point operations of precision p, and the
maxima of ``GpuFigures`` (``roofline_figures.gpu_figures``: measured, else the data sheet). No kernel reaches both
peaks, so this is a lower bound on its time. One equation for its users: the ``plain-roofline`` kernel baseline
(the ratio of the bounds on two GPUs, from Nsight Compute counts, ``kernel_baselines``) and the simulator's
task-kernel models (``task_roofline``: the bound as the time of a kernel without a history model, and the ratio of
the bounds scaling a measured time).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from nodecast.models.roofline_figures import GpuFigures


def bound_time_s(dram_bytes: np.ndarray | float, flop: Mapping[str, np.ndarray | float], figures: GpuFigures,
                 needed_by: str) -> np.ndarray:
    """``max(N_DRAM / BW_DRAM, sum_p FLOP_p / P_FMA,p)`` in seconds, per kernel (element-wise).

    Args:
        dram_bytes: bytes each kernel moves from DRAM.
        flop: precision (``fp64``, ``fp32``...) -> each kernel's FLOP of that precision, summed in this order.
        figures: the GPU's maxima (FLOP/s, bytes/s).
        needed_by: what needs the figures, for the error a missing one raises.

    A precision's peak is asked for only where some kernel has FLOP of it, so that a GPU without, say, an FP16
    peak still bounds FP32 kernels; a missing peak or DRAM bandwidth that is needed is an InputError naming the
    machine file key to add.
    """
    memory = np.asarray(dram_bytes, dtype=np.float64) / figures.bw("dram", needed_by)
    compute = np.zeros(memory.shape)
    for precision, count in flop.items():
        count = np.asarray(count, dtype=np.float64)
        if (count > 0).any():
            compute += count / figures.peak(precision, "fma", needed_by)
    return np.maximum(memory, compute)
