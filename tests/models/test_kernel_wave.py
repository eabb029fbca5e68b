"""Wave scaling (Habitat, section 3.3) without metrics: by hand, partial waves, gamma from copies, fallbacks, real data."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.models.base import Model
from nodecast.models.registry import get_models, model_names
from nodecast.models.kernel_wave import DEFAULT_GAMMA, WaveScalingModel
from nodecast.traces.kinds import CopyKind, OpKind
from nodecast.traces.nvprof_csv import read_nvprof_csv
from nodecast.traces.trace import Trace

ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-zoo"
TITAN, GTX970 = load_machine("gtx-titan"), load_machine("gtx-970")
# Their sheets: GTX TITAN 14 SMs, 876 MHz boost, 288.4 GB/s, sm_35; GTX 970 13 SMs, 1,178 MHz boost, 224 GB/s, sm_52.


def kernel_trace(grid: int, block: int, regs: int, smem: int, dur_ns: int = 1_000_000, name: str = "k(int*)",
                 copies: tuple[int, int] = (0, 0)) -> Trace:
    """One kernel launch, with an HtoD copy before it and a DtoH copy after it when their sizes are > 0."""
    rows = []
    if copies[0]:
        rows.append((OpKind.MEMCPY, CopyKind.HTOD, copies[0], -dur_ns, 0))
    rows.append((OpKind.KERNEL, CopyKind.NONE, 0, 0, dur_ns))
    if copies[1]:
        rows.append((OpKind.MEMCPY, CopyKind.DTOH, copies[1], dur_ns + 1, 2 * dur_ns))
    kinds, copy, nbytes, start, end = map(list, zip(*rows, strict=True))
    k = [r[0] == OpKind.KERNEL for r in rows]
    col = lambda v: [v if x else 0 for x in k]  # noqa: E731
    return Trace.from_columns({
        "kind": kinds, "copy_kind": copy, "bytes": nbytes, "start_ns": start, "end_ns": end,
        "grid_x": col(grid), "grid_y": col(1), "grid_z": col(1), "block_x": col(block), "block_y": col(1),
        "block_z": col(1), "registers_per_thread": [regs if x else -1 for x in k],
        "static_smem_bytes": [smem if x else -1 for x in k], "dynamic_smem_bytes": [0 if x else -1 for x in k],
        "name_id": [0 if x else -1 for x in k]}, [name])


def test_registered_and_protocol():
    """wave-scaling is a registered kernel model (not a baseline) following the Model protocol."""
    assert "wave-scaling" in model_names("kernel")
    m = get_models(["wave-scaling"])[0]
    assert isinstance(m, Model) and m.kind == "kernel" and not m.baseline


def test_equation_1_by_hand_fewer_waves_on_the_target():
    """subSeqMax's shape (32 blocks x 128 threads, 24 registers, 16,392 B shared): 2 blocks/SM x 14 SMs = 28 per
    wave on the TITAN (2 waves), 5 x 13 = 65 on the GTX 970 (1 wave); no copy, so gamma = 0.5:
    T_t = 1 ms x 1/2 x (32/28 x 288.4/224)^0.5 x (876/1178)^0.5."""
    tr = kernel_trace(32, 128, 24, 16392)
    res = WaveScalingModel().project(tr, TITAN, GTX970)
    want = 1e-3 * 0.5 * (32 / 28 * 288.4e9 / 224e9) ** 0.5 * (0.876e9 / 1.178e9) ** 0.5
    assert DEFAULT_GAMMA == 0.5
    assert res.time_s[0] == pytest.approx(want, rel=1e-12)
    # the interval: gamma = 1 and gamma = 0 ends
    lo, hi = sorted([1e-3 * 0.5 * 32 / 28 * 288.4e9 / 224e9, 1e-3 * 0.5 * 0.876e9 / 1.178e9])
    assert res.low_s[0] == pytest.approx(lo, rel=1e-12) and res.high_s[0] == pytest.approx(hi, rel=1e-12)


def test_gamma_from_copies_memory_bound_kernel_scales_with_dram():
    """A kernel whose copies need more than its time at the source's DRAM bandwidth is memory-bound (gamma 1):
    with full waves on both GPUs it scales by W_t D_s / (W_s D_t) x ceil ratio, i.e. like DRAM."""
    grid = 14 * 8 * 13 * 8 * 10  # whole waves on both: 8 blocks of 256 threads per SM on sm_35 and sm_52
    tr = kernel_trace(grid, 256, 10, 0, dur_ns=1_000_000, copies=(200_000_000, 100_000_000))
    res = WaveScalingModel().project(tr, TITAN, GTX970)
    k = np.flatnonzero(tr["kind"] == OpKind.KERNEL)[0]
    assert res.time_s[k] == pytest.approx(1e-3 * 288.4e9 / 224e9, rel=1e-9)
    assert any("gamma from the bytes copied" in n for n in res.notes)


def test_unknown_launch_configuration_fills_the_gpu():
    """Without grid/block sizes (ncu-derived traces), the full-wave form (Habitat's code) for a kernel filling the GPU many times over."""
    tr = Trace.from_columns({"kind": [OpKind.KERNEL], "start_ns": [0], "end_ns": [1_000_000], "name_id": [0]}, ["k"])
    res = WaveScalingModel().project(tr, TITAN, GTX970)
    want = 1e-3 * (288.4e9 / 224e9) ** 0.5 * (14 * 0.876e9 / (13 * 1.178e9)) ** 0.5
    assert res.time_s[0] == pytest.approx(want, rel=1e-12)
    assert any("without grid/block sizes" in n for n in res.notes)


def test_fp64_and_tensor_kernels_use_per_sm_peaks():
    """A kernel named for FP64 scales its compute term by the per-SM FP64 peak ratio (V100's 1/2 rate against an
    RTX 3090's 1/64), an FP32 one by the clock times the issue-limited FP32 lanes per SM (64 on sm_70, 128 on
    sm_86): with gamma 0.5 their times differ by the square root of the ratio of the two."""
    v100, rtx = load_machine("v100-sxm2-16gb"), load_machine("rtx-3090")
    f64 = WaveScalingModel().project(kernel_trace(10000, 256, 32, 0, name="k(double*)"), v100, rtx)
    f32 = WaveScalingModel().project(kernel_trace(10000, 256, 32, 0, name="k(float*)"), v100, rtx)
    per_sm = (v100.gpu.peak_flops_per_s("fp64") / v100.gpu.sms) / (rtx.gpu.peak_flops_per_s("fp64") / rtx.gpu.sms)
    fp32_rate = v100.gpu.clock_hz * 64 / (rtx.gpu.clock_hz * 128)
    assert per_sm > 10  # the 1/2 against 1/64 rate
    assert f64.time_s[0] / f32.time_s[0] == pytest.approx((per_sm / fp32_rate) ** 0.5, rel=1e-12)
    assert any("FP64: per-SM peak ratio" in n for n in f64.notes)


def test_kernel_zoo_beats_both_ratio_baselines():
    """On real cross-GPU runs (TITAN -> Tesla K20c, every program), wave scaling errs less than both the DRAM-ratio
    and the compute-ratio baselines (kernel-time WMAPE over all aligned launches)."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    k20 = load_machine("tesla-k20c")
    models = get_models(["wave-scaling", "dram-ratio", "flops-ratio"])
    err = dict.fromkeys((m.name for m in models), 0.0)
    total = 0.0
    for path in sorted((ZOO / "Titan").glob("*.csv"))[::4]:
        other = ZOO / "Tesla-K20" / path.name
        if not other.exists():
            continue
        a, b = read_nvprof_csv(path), read_nvprof_csv(other)
        ka, kb = a["kind"] == OpKind.KERNEL, b["kind"] == OpKind.KERNEL
        if ka.sum() != kb.sum():
            continue
        actual = b.duration_ns[kb] * 1e-9
        total += actual.sum()
        for m in models:
            err[m.name] += np.abs(m.project(a, TITAN, k20).time_s[ka] - actual).sum()
    wmape = {k: 100 * v / total for k, v in err.items()}
    assert wmape["wave-scaling"] < min(wmape["dram-ratio"], wmape["flops-ratio"]), wmape
    assert math.isfinite(wmape["wave-scaling"]) and wmape["wave-scaling"] < 15, wmape


def test_projection_is_equation_1_launch_by_launch():
    """On real runs (GTX TITAN matMul_gpu and vectorAdd, several sizes, one trace): every launch's projection is
    T_s x waves x mem^gamma x rate^(1 - gamma) of its own terms, and lies between the gamma = 0 and 1 ends."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    files = [ZOO / "Titan" / f for f in ("matMul_gpu-256.csv", "matMul_gpu-1024.csv", "vectorAdd-1048576.csv",
                                          "bitonic-131072.csv")]
    tr = Trace.concat([read_nvprof_csv(f) for f in files])
    from nodecast.models.kernel_footprint import kernel_rows
    from nodecast.models.kernel_wave import _median_unit, wave_terms

    rows = kernel_rows(tr)
    terms = wave_terms(tr, rows, TITAN, GTX970, "test")
    idx = terms.index if terms.index is not None else np.arange(len(rows))
    t_s = tr.duration_ns[rows] * 1e-9
    g = terms.gamma
    expected = t_s * terms.wave_ratio[idx] * terms.mem[idx] ** g * terms.rate[idx] ** (1 - g)
    result = WaveScalingModel().project(tr, TITAN, GTX970)
    np.testing.assert_allclose(result.time_s[rows], expected, rtol=1e-12)
    assert (result.low_s[rows] <= result.time_s[rows]).all() and (result.time_s[rows] <= result.high_s[rows]).all()
    assert 0 < (g != DEFAULT_GAMMA).sum() < len(g)  # some launches with copies beside them, some without
    assert abs(_median_unit(g) - np.median(g)) <= 5e-4


def test_fp32_compute_term_is_issue_limited():
    """Compute-bound (gamma 0 via a kernel whose copies are negligible) FP32 kernels scale by the clock times the
    issue-limited FP32 lanes per SM, min(FP32 lanes, warp schedulers x 32): Kepler's 192 lanes count 128 like
    Maxwell's 128, so GTX TITAN -> GTX 970 is the clock ratio; V100 (64) -> RTX 3090 (128) halves the time per SM
    and clock; a kernel whose name says no precision scales by the issue slots (128 on both of those); a target
    without scheduler counts (MI300X) keeps the clock ratio."""
    def compute_scale(src, tgt, name):
        tr = kernel_trace(100 * src.gpu.sms * 16, 256, 16, 0, name=name, copies=(1, 0))  # F = 1 B: gamma ~ 0
        return WaveScalingModel().project(tr, src, tgt).time_s[1] / 1e-3
    v100, rtx, h100, mi300x = (load_machine(k) for k in ("v100-sxm2-16gb", "rtx-3090", "h100-sxm5-80gb", "mi300x"))
    waves = lambda s, t, b: math.ceil(b / (t.gpu.sms * 8)) / math.ceil(b / (s.gpu.sms * 8))  # noqa: E731 (8 blocks/SM)
    assert compute_scale(TITAN, GTX970, "k(float*)") == pytest.approx(
        waves(TITAN, GTX970, 100 * 14 * 16) * TITAN.gpu.clock_hz / GTX970.gpu.clock_hz, rel=1e-6)
    fp32 = compute_scale(v100, rtx, "k(float*)")
    unnamed = compute_scale(v100, rtx, "k(int*)")
    assert fp32 / unnamed == pytest.approx(64 / 128, rel=1e-6)
    tr = kernel_trace(100 * 132 * 16, 256, 16, 0, name="k(float*)", copies=(1, 0))
    result = WaveScalingModel().project(tr, h100, mi300x)
    assert any("no warp-scheduler count for mi300x" in n for n in result.notes)
