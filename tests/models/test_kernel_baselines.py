"""Kernel baselines: DRAM-bandwidth ratio, peak-FLOP ratio, plain roofline, worked by hand."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nodecast.machines.loader import machine_from_dict
from nodecast.models.base import Model
from nodecast.models.registry import model_names
from nodecast.models.kernel_baselines import DramRatioModel, FlopsRatioModel, PlainRooflineModel
from nodecast.models.roofline_figures import measured_gpu_toml
from nodecast.traces.kinds import OpKind
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics, read_ncu_csv, trace_from_metrics
from nodecast.traces.trace import Trace

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
V100_FILES = sorted(TRACES.glob("ncu-csv_v100_*.csv"))


def machine(name: str, gpu: str, fp64: float, fp32: float, dram: float) -> object:
    """A one-GPU machine with FP64/FP32 data-sheet peaks, DRAM bandwidth and Table 1's measured maxima."""
    return machine_from_dict({
        "schema_version": 1, "name": name, "description": name,
        "cpu": {"model": "c", "sockets": 1, "cores_per_socket": 4, "clock_hz": 2e9, "memory_bytes": 1e10,
                "memory_bandwidth_bps": 1e11},
        "gpu": {"model": gpu, "count": 1, "sms": 80, "clock_hz": 1.5e9, "memory_bytes": 1.6e10,
                "peak_flops": {"fp64": {"fma": fp64, "addmul": fp64 / 2}, "fp32": {"fma": fp32, "addmul": fp32 / 2}},
                "levels": {"dram": {"bandwidth_bps": dram}}},
        "links": [{"id": "p", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}],
        "measured": tomllib.loads(measured_gpu_toml(gpu))["measured"]}, f"{name}.toml")


V100 = machine("v100", "V100", 7.8e12, 15.7e12, 900e9)
H100 = machine("h100", "H100", 33.5e12, 66.9e12, 3.35e12)


def metrics(rows: list[dict]) -> KernelMetrics:
    """Metrics rows (absent counts 0)."""
    full = []
    for i, r in enumerate(rows):
        row = {"kernel": f"k{i}", "occurrence": 0, "id": i, "duration_s": r["duration_s"]}
        for p in PRECISION_LETTER:
            for o in FLOP_OPS:
                row[f"{p}_{o}_inst"] = r.get(f"{p}_{o}_inst", 0.0)
        row.update(l1_bytes=r.get("dram_bytes", 0.0), l2_bytes=r.get("dram_bytes", 0.0),
                   dram_bytes=r.get("dram_bytes", 0.0), threads_per_inst=math.nan)
        full.append(row)
    return KernelMetrics(pd.DataFrame(full), ["test"], frozenset())


def test_registered_as_kernel_baselines():
    """The three baselines are registered kernel models marked as baselines and follow the Model protocol."""
    names = model_names("kernel")
    for cls in (DramRatioModel, FlopsRatioModel, PlainRooflineModel):
        assert cls.name in names
        m = cls()
        assert isinstance(m, Model) and m.kind == "kernel" and m.baseline


def test_dram_ratio_by_hand():
    """1 ms on the V100 (846 GB/s measured) -> 1 ms x 846/1907 = 0.443629 ms on the H100 (1907 GB/s)."""
    km = metrics([{"duration_s": 1e-3, "fp64_fma_inst": 1e8, "dram_bytes": 4e8}])
    res = DramRatioModel(km).project(trace_from_metrics(km), V100, H100)
    assert res.time_s[0] == pytest.approx(0.443629e-3, rel=1e-5)


def test_flops_ratio_uses_the_dominant_precision():
    """An FP64 kernel scales by 6.89/24.979 (measured FP64); an FP32 one by 15.7/66.9 (data sheets)."""
    # FP64: 1 ms x 6890/24979 = 0.275832 ms; FP32: 1 ms x 15.7/66.9 = 0.234679 ms.
    km = metrics([{"duration_s": 1e-3, "fp64_fma_inst": 1e8, "fp32_fma_inst": 1e6},
                  {"duration_s": 1e-3, "fp32_add_inst": 1e6}])
    res = FlopsRatioModel(km).project(trace_from_metrics(km), V100, H100)
    assert res.time_s[0] == pytest.approx(0.275832e-3, rel=1e-5)
    assert res.time_s[1] == pytest.approx(0.234679e-3, rel=1e-5)


def test_flops_ratio_notes_count_out_of_every_launch():
    """Each precision's note counts its launches out of all of them, those without FLOP said inside FP32's count
    (it read "1 kernel launches without FLOP" and "2 kernel launches FP32", the 1 being one of the 2)."""
    km = metrics([{"duration_s": 1e-3, "fp64_fma_inst": 1e8}, {"duration_s": 1e-3, "fp32_add_inst": 1e6},
                  {"duration_s": 1e-3}])
    notes = FlopsRatioModel(km).project(trace_from_metrics(km), V100, H100).notes
    assert notes[0].startswith("1 of 3 launches at the FP64 FMA peaks: x0.276")
    assert notes[1].startswith("2 of 3 launches at the FP32 FMA peaks (1 of them without FLOP, scaled by FP32 "
                               "by default): x0.235")
    assert len(notes) == 2


def test_plain_roofline_memory_and_compute_bound():
    """Eq. 1 on each GPU, DRAM only: a memory-bound kernel scales like DRAM, a compute-bound one like the peak."""
    # Memory-bound: max(4e8/846e9 = 4.72813e-4, 2e8/6.89e12 = 2.90276e-5) on V100; max(4e8/1907e9 = 2.09754e-4,
    #   2e8/24.979e12) on H100 -> 1 ms x 2.09754e-4/4.72813e-4 = 0.443629 ms.
    # Compute-bound: 1e10 DFMA = 2e10 FLOP: V100 2e10/6.89e12 = 2.90276e-3 s > 4.728e-4 s; H100 2e10/24.979e12 =
    #   8.00673e-4 s > 2.098e-4 s -> 5 ms x 8.00673e-4/2.90276e-3 = 1.37916 ms.
    km = metrics([{"duration_s": 1e-3, "fp64_fma_inst": 1e8, "dram_bytes": 4e8},
                  {"duration_s": 5e-3, "fp64_fma_inst": 1e10, "dram_bytes": 4e8}])
    res = PlainRooflineModel(km).project(trace_from_metrics(km), V100, H100)
    assert res.time_s[0] == pytest.approx(0.443629e-3, rel=1e-5)
    assert res.time_s[1] == pytest.approx(1.37916e-3, rel=1e-5)


def test_without_metrics_the_ratios_project_every_kernel_and_plain_roofline_none():
    """Built from the registry without metrics (as `nodecast project` does), dram-ratio and flops-ratio project
    the kernel from its trace duration (on a machine without compute peaks: SMs x clock), plain-roofline no op."""
    tr = Trace.from_columns({"kind": [OpKind.KERNEL, OpKind.MEMCPY], "start_ns": [0, 2_000_000],
                             "end_ns": [1_000_000, 3_000_000], "name_id": [0, -1]}, ["k"])
    bare = machine_from_dict({  # no compute peaks at all: must not matter when nothing is projected
        "schema_version": 1, "name": "bare", "description": "bare",
        "cpu": {"model": "c", "sockets": 1, "cores_per_socket": 4, "clock_hz": 2e9, "memory_bytes": 1e10,
                "memory_bandwidth_bps": 1e11},
        "gpu": {"model": "G", "count": 1, "sms": 1, "clock_hz": 1e9, "memory_bytes": 1e9,
                "levels": {"dram": {"bandwidth_bps": 1e11}}},
        "links": [{"id": "p", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}]}, "bare.toml")
    m = PlainRooflineModel()
    assert not m.accepts(tr).any()
    res = m.project(tr, bare, bare)
    assert np.isnan(res.time_s).all() and "no Nsight Compute metrics" in res.notes[0]
    for cls in (DramRatioModel, FlopsRatioModel):
        m = cls()
        assert m.accepts(tr).tolist() == [True, False]
        res = m.project(tr, bare, V100)
        assert np.isnan(res.time_s[1])
        # V100's DRAM figure is its measured 846 GB/s (Table 1), as roofline.gpu_figures takes it.
        want = 1e-3 * (1e11 / 846e9 if cls is DramRatioModel else (1 * 1e9) / (80 * 1.5e9))
        assert res.time_s[0] == pytest.approx(want, rel=1e-12), cls.name


@pytest.mark.skipif(len(V100_FILES) != 12, reason=f"the 12 ncu-csv_v100_* files are not in {TRACES}")
def test_real_v100_set_baselines():
    """On the real V100 set, dram-ratio scales every launch by 846/1907 and all three give finite times."""
    km = read_ncu_csv(V100_FILES)
    tr = trace_from_metrics(km)
    src = km.table["duration_s"].to_numpy()
    for cls in (DramRatioModel, FlopsRatioModel, PlainRooflineModel):
        res = cls(km).project(tr, V100, H100)
        assert np.isfinite(res.time_s).all() and (res.time_s > 0).all()
    assert np.allclose(DramRatioModel(km).project(tr, V100, H100).time_s, src * 846 / 1907)


def test_flops_ratio_fp32_issue_limited_without_metrics():
    """Without metrics, an FP32-named kernel scales by SMs x clock x issue-limited FP32 lanes per SM (Kepler's
    192 lanes count 128, single issue: GTX TITAN -> GTX 970 is the SM-clock ratio, not the 4.71 -> 3.92 TFLOP/s
    peak ratio); an FP64-named one by its peak ratio."""
    from nodecast.machines import load_machine

    titan, gtx970 = load_machine("gtx-titan"), load_machine("gtx-970")
    tr = Trace.from_columns({"kind": [OpKind.KERNEL, OpKind.KERNEL], "start_ns": [0, 2_000_000],
                             "end_ns": [1_000_000, 3_000_000], "name_id": [0, 1]}, ["k(float*)", "k(double*)"])
    res = FlopsRatioModel().project(tr, titan, gtx970)
    assert res.time_s[0] == pytest.approx(1e-3 * (14 * 0.876e9) / (13 * 1.178e9), rel=1e-12)
    assert res.time_s[1] == pytest.approx(1e-3 * 1.5e12 / 122.5e9, rel=1e-12)
    assert any("issue-limited FP32 lanes per SM and clock 128 -> 128" in n for n in res.notes)


def test_a_metrics_free_baseline_must_say_how_it_projects_without_metrics():
    """A subclass that sets metrics_free without its own _scale_free is refused when it is defined, not when a
    trace without metrics first reaches it."""
    from nodecast.models.kernel_baselines import _KernelBaseline

    with pytest.raises(TypeError, match="_scale_free"):
        class Broken(_KernelBaseline):  # noqa: F841
            metrics_free = True

            def _scale(self, t_s, mrows, src, tgt, notes, machines):  # noqa: ANN001, ANN202
                return t_s
