"""``nodecast.cost.kernels``: every kernel model over an Nsight Compute metrics table (``project_metrics``), its
tables' short kernel labels, on hand-made launches and the real V100 set of ../shared/data/traces."""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
import pytest

from nodecast.cost.kernels import project_metrics, short_kernel_labels, short_kernel_name
from nodecast.errors import InputError
from nodecast.machines.loader import machine_from_dict
from nodecast.models.registry import model_names
from nodecast.models.roofline import RooflineModel
from nodecast.models.roofline_figures import measured_gpu_toml
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics, read_ncu_csv, trace_from_metrics


def machine(name: str, model: str, peaks: dict[str, float], dram_bps: float, gpu: str) -> object:
    """A one-GPU machine with FMA ``peaks`` (ADD/MUL = half), its DRAM bandwidth and Table 1's maxima for ``gpu``."""
    data = {
        "schema_version": 1, "name": name, "description": f"test machine {name}",
        "cpu": {"model": "test cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9,
                "memory_bytes": 64e9, "memory_bandwidth_bps": 100e9},
        "gpu": {"model": model, "count": 1, "sms": 80, "clock_hz": 1.53e9, "memory_bytes": 16e9,
                "peak_flops": {p: {"fma": v, "addmul": v / 2} for p, v in peaks.items()},
                "levels": {"dram": {"bandwidth_bps": dram_bps}}},
        "links": [{"id": "pcie0", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}],
        "measured": tomllib.loads(measured_gpu_toml(gpu))["measured"],
    }
    return machine_from_dict(data, f"{name}.toml")


# V100-SXM2 and H100-SXM5 data sheets (DATASHEETS.md D.1) with Table 1's measured maxima.
V100 = machine("v100", "V100", {"fp64": 7.8e12, "fp32": 15.7e12, "fp16": 31.4e12}, 900e9, "V100")
H100 = machine("h100", "H100", {"fp64": 33.5e12, "fp32": 66.9e12, "fp16": 133.8e12}, 3.35e12, "H100")


@pytest.fixture(scope="module")
def v100_metrics(shared_dir):
    """The 12 one-metric files of DeepCAM's LAMB step on a V100 (35 launches of 5 kernels), read once."""
    files = sorted(shared_dir.glob("ncu-csv_v100_*.csv"))
    if len(files) != 12:
        pytest.skip(f"the 12 ncu-csv_v100_* files are not in {shared_dir}")
    return read_ncu_csv(files)


def _one_launch() -> KernelMetrics:
    """One 1 ms launch of 1e8 DFMA that reads 4e8 B from DRAM."""
    row = {"kernel": "k", "occurrence": 0, "id": 0, "duration_s": 1e-3, "l1_bytes": 4e8, "l2_bytes": 4e8,
           "dram_bytes": 4e8, "threads_per_inst": 32.0}
    for p in PRECISION_LETTER:
        for o in FLOP_OPS:
            row[f"{p}_{o}_inst"] = 1e8 if (p, o) == ("fp64", "fma") else 0.0
    return KernelMetrics(pd.DataFrame([row]), ["test"], frozenset())


def test_every_kernel_model_but_the_default_in_registry_order():
    """By default every registered kernel model runs, in the registry's order, except ``default-kernel`` (with
    metrics for every launch it is the roofline: not shown twice); the roofline's detail is kept."""
    kp = project_metrics(_one_launch(), V100, H100)
    assert list(kp.results) == [n for n in model_names("kernel") if n != "default-kernel"]
    assert kp.roofline is not None and kp.launches()["roofline_s"].iat[0] == kp.results["roofline"].time_s[0]


def test_a_transfer_model_is_refused():
    """Naming a transfer model is an InputError on --models, not a projection of no kernel."""
    with pytest.raises(InputError, match="'ahead' is a transfer model, not a kernel model"):
        project_metrics(_one_launch(), V100, H100, ["ahead"])


def test_labels_of_kernels_whose_short_names_coincide():
    """Three real EigenMetaKernel instances (TensorFlow on a GTX Titan X, nvprof) get one label each, numbered."""
    stem = ("_ZN5Eigen8internal15EigenMetaKernelINS_15TensorEvaluatorIKNS_14TensorAssignOpINS_9TensorMapINS_6Tensor"
            "IfLi1ELi1EiEELi16ENS_11MakePointerEEEKNS_18TensorCwiseUnaryOpINS0_12scalar_rightIffNS0_")
    names = [stem + "17scalar_product_opIffEEEEKNS4_INS5_IKfLi1ELi1EiEELi16ES7_EEEEEENS_9GpuDeviceEEEiEEvT_T0_",
             stem + "13scalar_sum_opIffEEEEKNS4_INS5_IKfLi1ELi1EiEELi16ES7_EEEEEENS_9GpuDeviceEEEiEEvT_T0_",
             "cleanup(float*, float*, float*, float*, bool, int)"]
    labels = short_kernel_labels([names[0], names[2], names[1], names[0]])
    short = short_kernel_name(names[0])
    assert short == short_kernel_name(names[1])
    assert labels == {names[0]: f"{short} #1", names[2]: "cleanup", names[1]: f"{short} #2"}


def test_v100_set_projects_onto_h100(v100_metrics):
    """All 35 real launches project onto the H100 with finite intervals; the streaming LAMB kernels are DRAM-bound."""
    km = v100_metrics
    kp = project_metrics(km, V100, H100)
    df = kp.launches()
    assert len(df) == len(km)
    assert np.isfinite(df[["roofline_low_s", "roofline_high_s", "roofline_s"]].to_numpy()).all()
    assert (df["roofline_low_s"] <= df["roofline_s"]).all() and (df["roofline_s"] <= df["roofline_high_s"]).all()
    lamb = df[df["kernel"].str.contains("LAMBStage")]
    assert set(lamb["bound_target"]) == {"dram"}
    # DRAM-bound with dram >= lts >= l1 bytes: all levels collapse onto DRAM, time = T_s x 846/1907 exactly.
    assert np.allclose(lamb["roofline_s"], lamb["source_s"] * 846 / 1907, rtol=1e-9)
    s = kp.summary()
    assert len(s) == len(km.kernel_names)
    assert any("1.31 GHz" in n for n in kp.results["roofline"].notes)


def test_v100_trace_from_metrics_roundtrip(v100_metrics):
    """The Trace built from the real metrics projects the same times as the metrics-level API."""
    km = v100_metrics
    trace = trace_from_metrics(km)
    res = RooflineModel(km).project(trace, V100, H100)
    again = project_metrics(km, V100, H100, ["roofline"]).results["roofline"]
    assert np.allclose(res.time_s, again.time_s)
