"""The plain roofline bound: one equation for the plain-roofline baseline and the simulator's task-kernel models."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.roofline_bound import bound_time_s
from nodecast.models.roofline_figures import GpuFigures, gpu_figures
from nodecast.models.task_kernel import KernelQuery
from nodecast.models.task_roofline import RooflineKernelTimes, RooflineRatio

# h100-sxm5-server's data-sheet figures (catalogue, DATASHEETS.md D.1)
H100_FP32_FMA = 66.9e12
H100_FP64_FMA = 33.5e12
H100_DRAM = 3.35e12


@pytest.fixture(scope="module")
def h100():
    return gpu_figures(load_machine("h100-sxm5-server"))


def test_bound_is_the_slower_of_dram_and_the_flop_of_every_precision(h100):
    """max(N_DRAM / BW_DRAM, sum_p FLOP_p / P_FMA,p), per kernel: memory-bound, compute-bound, and a kernel whose
    FP64 and FP32 FLOP add up."""
    dram = np.array([1 << 30, 1e6, 1e6])
    flop = {"fp64": np.array([0.0, 0.0, 1e10]), "fp32": np.array([1e6, 2e10, 2e10])}
    got = bound_time_s(dram, flop, h100, "test")
    assert got[0] == pytest.approx((1 << 30) / H100_DRAM, rel=1e-12)
    assert got[1] == pytest.approx(2e10 / H100_FP32_FMA, rel=1e-12)
    assert got[2] == pytest.approx(1e10 / H100_FP64_FMA + 2e10 / H100_FP32_FMA, rel=1e-12)


def test_a_precision_without_flop_needs_no_peak(h100):
    """A GPU without an FP16 peak still bounds FP32 kernels; FP16 FLOP on it is the error naming the key to add."""
    fig = GpuFigures("bare", "GPU-X", "bare.toml", {"fp32": 1e12}, {}, {"dram": 1e12}, {})
    assert bound_time_s(1e12, {"fp16": 0.0, "fp32": 2e12}, fig, "test") == 2.0  # 1 s of DRAM, 2 s of FP32
    with pytest.raises(InputError, match="gpu.peak_flops.fp16"):
        bound_time_s(4e12, {"fp16": 1.0}, fig, "test")


def test_the_simulators_roofline_models_are_the_same_bound(h100):
    """roofline-missing's time and roofline-ratio's factor are the bound of the task's bytes and FLOP, bit for bit."""
    v100 = gpu_figures(load_machine("v100-pcie-server"))
    for flops, size in ((2.0 * 960**3, 3 * 3686400), (1e6, 1 << 30), (0.0, 4096)):
        q = KernelQuery("k", "cuda", 0, size, None, flops)
        on_h100 = float(bound_time_s(size, {"fp32": flops}, h100, "test"))
        assert RooflineKernelTimes(h100, "single")(q) == on_h100
        assert RooflineRatio(v100, h100, "single")(q) == on_h100 / float(bound_time_s(size, {"fp32": flops}, v100, "t"))
