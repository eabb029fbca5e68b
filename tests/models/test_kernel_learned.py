"""The learned kernel model: same GPU gives the measured time, the packaged fit loads, intervals, bad files."""

import json

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.kernel_family import Family
from nodecast.models.kernel_features import PEAK_KEYS, OpFeatures, figures_of
from nodecast.models.kernel_learned import (ENV, LearnedKernelModel, load_params, params_from_dict, peak_key_of,
                                            project_ops, widening)
from nodecast.traces.op_classes import DType
from nodecast.traces.trace import Trace, TraceMeta


def _ops(n=4, family=Family.GEMM, peak="bf16_tensor"):
    return OpFeatures(family=np.full(n, family, np.int8), peak_key=np.full(n, PEAK_KEYS.index(peak), np.int8),
                      t_a_s=np.geomspace(1e-6, 1e-2, n), flops=np.full(n, np.nan), work_bytes=np.full(n, np.nan),
                      blocks=np.full(n, 1000), threads=np.full(n, 256), tiles=np.zeros(n))


def test_the_same_gpu_gives_the_measured_time_and_no_interval():
    h100 = load_machine("h100-sxm5-80gb")
    ops = _ops()
    t, lo, hi, notes = project_ops(ops, h100, h100, load_params())
    assert np.array_equal(t, ops.t_a_s) and np.array_equal(lo, t) and np.array_equal(hi, t)
    assert "same data-sheet figures" in notes[0]


def test_a_faster_gpu_runs_big_gemms_faster_and_the_interval_holds_the_point():
    t, lo, hi, _ = project_ops(_ops(), load_machine("a100-sxm4-80gb"), load_machine("h100-sxm5-80gb"), load_params())
    assert t[-1] < _ops().t_a_s[-1]  # a 10 ms bf16 GEMM: H100 is faster than A100
    assert np.all(lo <= t) and np.all(t <= hi) and np.all(lo < hi)


def test_another_vendor_widens_the_interval_and_says_so():
    p = load_params()
    ops = _ops()
    h100, mi300x = load_machine("h100-sxm5-80gb"), load_machine("mi300x")
    t, lo, hi, notes = project_ops(ops, h100, mi300x, p)
    assert any("vendor the kernel model never saw" in n for n in notes)
    seen = dict(p.seen, vendors=["nvidia", "amd"], architectures=[*p.seen["architectures"], "CDNA 3"])
    widen, _ = widening(seen, figures_of(h100), figures_of(mi300x), np.zeros((len(ops), 5)),
                        np.ones(len(ops), bool), ops.family, ops.peak_key)
    widen_unseen, _ = widening(p.seen, figures_of(h100), figures_of(mi300x), np.zeros((len(ops), 5)),
                               np.ones(len(ops), bool), ops.family, ops.peak_key)
    assert np.all(widen_unseen > widen)


@pytest.mark.parametrize(("family", "dtype", "name", "key"), [
    (Family.GEMM, DType.BF16, None, "bf16_tensor"), (Family.GEMM, DType.FP32, None, "fp32"),
    (Family.ELEMENTWISE, DType.BF16, None, "bf16"), (Family.GEMM, DType.NVFP4, None, "fp4_tensor"),
    (Family.GEMM, DType.UNKNOWN, "ampere_bf16_s16816gemm_bf16_128x128_ldg8", "bf16_tensor"),
    (Family.OTHER, DType.UNKNOWN, "mystery", "fp32"),
])
def test_peak_key_of(family, dtype, name, key):
    assert peak_key_of(family, dtype, name) == key


def test_model_projects_kernels_of_a_trace_only():
    cols = {"kind": np.array([0, 1, 0], np.int8), "start_ns": np.array([0, 10_000, 20_000]),
            "end_ns": np.array([5_000, 15_000, 10_020_000]), "name_id": np.array([0, -1, 1], np.int32),
            "grid_x": np.array([80, 0, 400], np.int32), "block_x": np.array([256, 0, 256], np.int32),
            "copy_kind": np.array([0, 1, 0], np.int8), "bytes": np.array([0, 4096, 0])}
    trace = Trace.from_columns(cols, ["vectorAdd(float*)", "volta_sgemm_128x64_nn"], TraceMeta(gpus={0: "Tesla T4"}))
    r = LearnedKernelModel().project(trace, load_machine("t4"), load_machine("v100-pcie-32gb"))
    assert np.isnan(r.time_s[1]) and np.isfinite(r.time_s[[0, 2]]).all()
    assert r.time_s[2] < 10e-3  # V100 beats T4 on a 10 ms FP32 GEMM
    assert "fitted on" in r.notes[0]


def test_a_team_can_point_at_its_own_fit(tmp_path, monkeypatch):
    doc = load_params().to_dict()
    doc["weights"] = [0.0] * len(doc["weights"])  # the bare compute ratio
    path = tmp_path / "ours.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setenv(ENV, str(path))
    p = load_params()
    assert p.source == str(path) and not np.any(p.weights)
    a, b = load_machine("a100-sxm4-80gb"), load_machine("h100-sxm5-80gb")
    t, _, _, _ = project_ops(_ops(), a, b, p)
    ratio = figures_of(a).peaks["bf16_tensor"] / figures_of(b).peaks["bf16_tensor"]
    assert np.allclose(t, _ops().t_a_s * ratio)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(format=99), "format 1"),
    (lambda d: d.update(weights=d["weights"][:-1]), "reshape"),
    (lambda d: d.update(ratios=["dram"]), "differ"),
    (lambda d: d.pop("interval"), "interval"),
])
def test_a_damaged_parameter_file_is_one_line(edit, message, tmp_path):
    doc = load_params().to_dict()
    edit(doc)
    with pytest.raises(InputError) as err:
        params_from_dict(json.loads(json.dumps(doc)), str(tmp_path / "x.json"))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_missing_or_non_json_parameter_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "absent.json"))
    with pytest.raises(InputError, match="cannot read"):
        load_params()
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    monkeypatch.setenv(ENV, str(bad))
    with pytest.raises(InputError, match="not JSON"):
        load_params()
