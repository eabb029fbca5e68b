"""The default kernel model: roofline where metrics exist, wave scaling elsewhere, per op; the registry's choice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.registry import DEFAULT_MODELS, default_model
from nodecast.models.kernel_default import DefaultKernelModel
from nodecast.models.kernel_wave import WaveScalingModel
from nodecast.models.roofline import RooflineModel
from nodecast.traces.ncu import read_ncu_csv, trace_from_metrics

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
V100_FILES = sorted(TRACES.glob("ncu-csv_v100_*.csv"))
needs_v100 = pytest.mark.skipif(len(V100_FILES) != 12, reason=f"the 12 ncu-csv_v100_* files are not in {TRACES}")


def table1_machine(gpu: str, fp32: float, dram: float):  # noqa: ANN201
    """A one-GPU machine file with data-sheet FP32 peak and DRAM bandwidth and Table 1's measured maxima."""
    import tomllib

    from nodecast.machines.loader import machine_from_dict
    from nodecast.models.roofline_figures import measured_gpu_toml

    return machine_from_dict({
        "schema_version": 1, "name": gpu.lower(), "description": gpu,
        "cpu": {"model": "c", "sockets": 1, "cores_per_socket": 4, "clock_hz": 2e9, "memory_bytes": 1e10,
                "memory_bandwidth_bps": 1e11},
        "gpu": {"model": gpu, "count": 1, "sms": 80, "clock_hz": 1.5e9, "memory_bytes": 1.6e10,
                "peak_flops": {"fp32": {"fma": fp32, "addmul": fp32 / 2}},
                "levels": {"dram": {"bandwidth_bps": dram}}},
        "links": [{"id": "p", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}],
        "measured": tomllib.loads(measured_gpu_toml(gpu))["measured"]}, f"{gpu}.toml")


def test_registry_default_for_kernels():
    """default_model('kernel') is the default-kernel model; a kind without a default is a clear error."""
    assert DEFAULT_MODELS["kernel"] == "default-kernel"
    assert isinstance(default_model("kernel"), DefaultKernelModel)
    with pytest.raises(InputError, match="no default model for 'sync' ops"):
        default_model("sync")


@needs_v100
def test_roofline_for_ops_with_metrics_wave_scaling_for_the_rest():
    """With metrics for the first 10 of 35 launches, those 10 get the roofline's ratio B/A on their measured time,
    interval alike (``T_trace x roofline(A -> B) / roofline(A -> A)``), the other 25 wave scaling's, and the notes
    count both."""
    v100, h100 = table1_machine("V100", 15.7e12, 900e9), table1_machine("H100", 66.9e12, 3.35e12)
    full = read_ncu_csv(V100_FILES)
    trace = trace_from_metrics(full)
    some = full.take(np.arange(10))
    res = DefaultKernelModel(some).project(trace, v100, h100)
    roof = RooflineModel(some).project(trace, v100, h100)
    on_a = RooflineModel(some).project(trace, v100, v100)
    wave = WaveScalingModel().project(trace, v100, h100)
    measured = trace.duration_ns[:10] * 1e-9
    np.testing.assert_allclose(res.time_s[:10], measured * roof.time_s[:10] / on_a.time_s[:10], rtol=1e-12)
    np.testing.assert_allclose(res.low_s[:10], measured * roof.low_s[:10] / on_a.time_s[:10], rtol=1e-12)
    # trace_from_metrics rounds ncu's durations to the ns: the ratio is what eq. 9 gives, to that rounding
    np.testing.assert_allclose(res.time_s[:10], roof.time_s[:10], rtol=1e-3)
    np.testing.assert_array_equal(res.time_s[10:], wave.time_s[10:])
    np.testing.assert_array_equal(res.high_s[10:], wave.high_s[10:])
    assert res.notes[0].startswith("10 of 35 kernel ops by roofline (they have Nsight Compute metrics), 25 by "
                                   "wave-scaling: a GPU older than Pascal or without a data sheet")
    assert any(n.startswith("roofline: ") for n in res.notes) and any(n.startswith("wave-scaling: ") for n in res.notes)


@pytest.mark.parametrize(("source", "target", "model"), [
    ("t4", "l4", "learned-kernel"), ("v100-pcie-32gb", "h100-sxm5-80gb", "learned-kernel"),
    ("p100-pcie-16gb", "a100-sxm4-80gb", "learned-kernel"), ("gtx-titan", "gtx-970", "wave-scaling"),
    ("h100-sxm5-80gb", "mi300x", "learned-kernel"), ("gtx-970", "t4", "wave-scaling"),
])
def test_without_metrics_it_is_the_learned_model_from_pascal_on_and_wave_scaling_before(source, target, model):
    """Without metrics the kernels are projected by the learned model between NVIDIA GPUs of Pascal or newer and
    AMD Instinct GPUs (where it beat wave scaling on GPUs it never saw), by wave scaling otherwise; the note says
    which and why."""
    from nodecast.models.registry import get_models
    from nodecast.traces.kinds import OpKind
    from nodecast.traces.trace import Trace

    tr = Trace.from_columns({"kind": [OpKind.KERNEL, OpKind.MEMCPY], "start_ns": [0, 5], "end_ns": [4000, 9000],
                             "name_id": [0, -1], "grid_x": [100, 0], "block_x": [256, 0]}, ["k"])
    a, b = load_machine(source), load_machine(target)
    res = DefaultKernelModel().project(tr, a, b)
    own = get_models([model])[0].project(tr, a, b)
    assert np.isfinite(res.time_s[0]) and np.isnan(res.time_s[1])
    assert res.time_s[0] == own.time_s[0]
    assert f"1 by {model} (no metrics given): " in res.notes[0]


@needs_v100
def test_composed_nodes_use_the_roofline_and_a_missing_peak_falls_back_to_wave_scaling():
    """Nodes composed from data sheets have every memory level the roofline needs (the sheets' L2 and L1
    bandwidths): all 35 ops by roofline. A target without the kernels' FP32 peak cannot run the roofline: the
    note says why, and its ops are projected by wave scaling rather than failing the projection."""
    from dataclasses import replace

    v100, h100 = load_machine("v100-sxm2-16gb"), load_machine("h100-sxm5-80gb")
    full = read_ncu_csv(V100_FILES)
    trace = trace_from_metrics(full)
    res = DefaultKernelModel(full).project(trace, v100, h100)
    assert np.isfinite(res.time_s).all()
    assert res.notes[0].startswith("35 of 35 kernel ops by roofline")
    bare = table1_machine("H100", 66.9e12, 3.35e12)
    bare = replace(bare, gpu=replace(bare.gpu, peak_flops={}))
    res = DefaultKernelModel(full).project(trace, table1_machine("V100", 15.7e12, 900e9), bare)
    assert np.isfinite(res.time_s).all()
    assert res.notes[0].startswith("0 of 35 kernel ops by roofline")
    assert any("roofline not used" in n and "no FP32 compute peak" in n for n in res.notes)


def _faster_run(full, factor: float):  # noqa: ANN001, ANN202
    """The Trace of the metrics' launches with every duration ``factor`` x Nsight Compute's (the run's own times:
    ncu replays each kernel at clocks locked to base, so the run is faster)."""
    from nodecast.traces.trace import Trace

    ncu = trace_from_metrics(full)
    dur = np.maximum(np.rint(ncu.duration_ns * factor), 1).astype(np.int64)
    end = np.cumsum(dur)
    return Trace.from_columns({"kind": ncu["kind"], "start_ns": end - dur, "end_ns": end, "name_id": ncu["name_id"],
                               "correlation": ncu["correlation"]}, ncu.names, ncu.meta, sort=False)


@needs_v100
def test_roofline_ops_are_ratios_on_the_runs_measured_times():
    """With metrics, the default kernel model gives a kernel the trace's time x roofline(B) / roofline(A): on A
    itself, exactly the run's times with no interval (it gave Nsight Compute's, 25 % slower here); on another GPU,
    eq. 9's projection scaled by the run's time over ncu's."""
    v100, h100 = load_machine("v100-sxm2-16gb"), load_machine("h100-sxm5-80gb")
    full = read_ncu_csv(V100_FILES)
    trace = _faster_run(full, 0.8)
    measured = trace.duration_ns * 1e-9
    same = DefaultKernelModel(full).project(trace, v100, v100)
    assert same.notes[0].startswith("35 of 35 kernel ops by roofline")
    np.testing.assert_array_equal(same.time_s, measured)
    np.testing.assert_array_equal(same.low_s, measured)
    np.testing.assert_array_equal(same.high_s, measured)
    other = DefaultKernelModel(full).project(trace, v100, h100)
    eq9 = RooflineModel(full).project(trace, v100, h100)
    np.testing.assert_allclose(other.time_s, eq9.time_s * 0.8, rtol=2e-3)  # 0.8 to the ns rounding of the trace
    assert any("x roofline(B) / roofline(A), per kernel: the run as calibration" in n for n in other.notes)
