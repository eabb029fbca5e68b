"""``nodecast calibrate``: Comm|Scope-grade microbenchmarks of the node you have.

The pieces, each in its own module:

=================  ==================================================================
plan               benchmark families, cases, sizes, budgets (pure)
stats              summaries of repeated timings, the repeat-until-budget loop (pure)
run                measurement points, and running a plan with any ``Measurer`` (pure)
fit                LogGP fits: 1-byte cost, bandwidth, curve per copy class (pure)
derive             a Machine file's measured values from the results (pure)
host               CPU governor, NUMA nodes and binding, cache flushing (Linux sysfs)
writers            Google-Benchmark JSON and Machine TOML (pure)
cuda               thin cuda-python layer: devices, buffers, events, NVRTC kernels (GPU)
transfer_kernels   the transfer kernels and the gate that holds a stream (GPU)
transfers          the transfer families on top of ``cuda`` (GPU)
gpu_peaks          FMA/ADD-MUL peaks and per-level bandwidth kernels (GPU)
session            this node's GPUs and host, opened for calibration (GPU)
=================  ==================================================================

This package runs a plan with any ``Measurer`` (the GPU one comes from
``open_session``; tests use a fake) and derives the values a Machine file
carries from the results (``run``, ``derive``, re-exported here). Importing it
never imports cuda-python.
"""

from __future__ import annotations

# The pieces live in submodules (which import them from there, never from this package); this package re-exports
# them so that ``nodecast.calibrate.run_plan`` and the others keep their place.
from nodecast.calibrate.derive import MeasuredValues, derive_measured, reference_cases
from nodecast.calibrate.plan import Topology
from nodecast.calibrate.run import MeasureError, Measurer, Point, PointResult, ProgressFn, run_plan


def open_session(**kwargs: object):  # noqa: ANN201 - the session type lives in the GPU layer
    """A calibration session on this node's GPUs (``nodecast.calibrate.session.Session``).

    Raises GPUUnavailableError when cuda-python is missing or there is no
    CUDA driver or device.
    """
    from nodecast.calibrate.session import Session  # here, not above: importing nodecast.calibrate stays GPU-free

    return Session.open(**kwargs)


__all__ = [
    "MeasureError",
    "MeasuredValues",
    "Measurer",
    "Point",
    "PointResult",
    "Topology",
    "derive_measured",
    "open_session",
    "reference_cases",
    "run_plan",
]
