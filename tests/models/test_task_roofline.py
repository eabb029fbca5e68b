"""Roofline-projected task times: ``roofline-missing`` for GPU kernels without a model (library and ``simulate
--roofline-missing``) and ``roofline-ratio`` between two GPUs (``--kernels-measured-on``)."""

from __future__ import annotations

import json

import pytest

from nodecast.cli import main
from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.roofline_figures import GpuFigures, gpu_figures
from nodecast.models.history import KernelModels, KernelQuery
from nodecast.models.task_roofline import RooflineKernelTimes, RooflineRatio

# h100-sxm5-server's data-sheet figures (catalogue, DATASHEETS.md D.1)
H100_FP32_FMA = 66.9e12
H100_FP64_FMA = 33.5e12
H100_DRAM = 3.35e12


@pytest.fixture(scope="module")
def h100():
    return gpu_figures(load_machine("h100-sxm5-server"))


def _query(flops, size, kind="cuda", kernel="k"):
    return KernelQuery(kernel, kind, 0, size, None, flops)


def test_compute_bound_kernel_takes_flops_over_fma_peak(h100):
    gemm = 2.0 * 960**3  # one 960 x 960 SGEMM tile update, 3 tiles of 3,686,400 B
    t = RooflineKernelTimes(h100, "single")(_query(gemm, 3 * 3686400))
    assert t == pytest.approx(gemm / H100_FP32_FMA, rel=1e-12)  # 26.4 us; the bytes would take 3.3 us
    t64 = RooflineKernelTimes(h100, "double")(_query(gemm, 3 * 7372800))
    assert t64 == pytest.approx(gemm / H100_FP64_FMA, rel=1e-12)


def test_memory_bound_kernel_takes_bytes_over_dram_bandwidth(h100):
    t = RooflineKernelTimes(h100, "fp32")(_query(1e6, 1 << 30))  # a copy-like kernel: 1 GiB, little arithmetic
    assert t == pytest.approx((1 << 30) / H100_DRAM, rel=1e-12)


def test_cpu_kernels_and_empty_kernels_get_no_projection(h100):
    rt = RooflineKernelTimes(h100)
    assert rt(_query(1e9, 1000, kind="cpu")) is None
    assert rt(_query(0.0, 0)) is None


def test_missing_peaks_and_unknown_precision_are_input_errors(h100):
    empty = GpuFigures("bare", "GPU-X", "bare.toml", {}, {}, {}, {})
    with pytest.raises(InputError, match="gpu.peak_flops.fp32"):
        RooflineKernelTimes(empty, "single")
    with pytest.raises(InputError, match="precision"):
        RooflineKernelTimes(h100, "quad")


@pytest.mark.shared
def test_models_prefer_measurements_and_note_each_projection_once(starpu_data, h100):
    models = KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila", fallback=RooflineKernelTimes(h100))
    measured = models.expected_s("chol_model_gemm", "cuda", 0, 11059200, flops=2.0 * 960**3)
    assert measured > 1e-3  # attila's Tesla C2050 measurement (milliseconds), not H100's 26 us roofline
    assert models.notes == []
    for devid in (0, 1, 2):
        t = models.expected_s("mystery", "cuda", devid, 4000, flops=8e9)
        assert t == pytest.approx(8e9 / H100_FP32_FMA)
    assert len([n for n in models.notes if n.startswith("kernels without a model: roofline")]) == 1
    assert len([n for n in models.notes if n.startswith("mystery, 4000 B on cuda")]) == 1
    with pytest.raises(InputError, match="mystery"):
        models.expected_s("mystery", "cpu", 0, 4000, flops=8e9)  # no CPU roofline: still the model error


def test_cli_needs_the_flag_then_projects_every_kernel_on_a_catalogue_machine(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NODECAST_STARPU_DIR", raising=False)
    code = main(["simulate", "cholesky", "--size", "9600", "--machine", "h100-sxm5-server"])
    assert code == 2
    assert "--roofline-missing" in capsys.readouterr().err
    out = tmp_path / "h100.json"
    args = ["simulate", "cholesky", "--size", "9600", "--machine", "h100-sxm5-server", "--roofline-missing", "--json", str(out)]
    assert main(args) == 0
    notes = json.loads(out.read_text())["notes"]
    gemm = next(n for n in notes if n.startswith("chol_model_gemm,"))
    assert f"{2.0 * 960**3 / H100_FP32_FMA * 1e6:.1f} us" in gemm
    assert any("H100-SXM5-80GB" in n for n in notes)


@pytest.mark.shared
def test_cli_roofline_gpu_rules(tmp_path, capsys, starpu_data):
    starpu = ["--starpu-dir", str(starpu_data / "sampling"), "--starpu-machine", "attila"]
    dag = tmp_path / "k.json"
    dag.write_text(
        json.dumps(
            {
                "data": [{"name": "A", "size_bytes": 3686400}],
                "tasks": [{"kernel": "mystery", "access": [["A", "RW"]], "flops": 1e10}],
            }
        )
    )
    assert main(["simulate", "--dag", str(dag), *starpu, "--roofline-missing"]) == 2
    assert "--roofline-gpu" in capsys.readouterr().err  # a StarPU platform has no GPU peaks of its own
    assert main(["simulate", "--dag", str(dag), *starpu, "--roofline-gpu", "h100-sxm5-server"]) == 2
    assert "only matters with --roofline-missing" in capsys.readouterr().err
    out = tmp_path / "s.json"
    args = ["simulate", "--dag", str(dag), *starpu, "--roofline-missing", "--roofline-gpu", "h100-sxm5-server", "--json", str(out)]
    assert main(args) == 0
    summary = json.loads(out.read_text())
    assert any(n.startswith("mystery, 3686400 B on cuda") and f"{1e10 / H100_FP32_FMA * 1e6:.1f} us" in n for n in summary["notes"])


@pytest.mark.shared
def test_starpu_times_on_another_machine_are_flagged(tmp_path, starpu_data):
    out = tmp_path / "s.json"
    args = ["simulate", "cholesky", "--size", "9600", "--machine", "h100-sxm5-server", "--json", str(out)]
    assert main([*args, "--starpu-dir", str(starpu_data / "sampling"), "--starpu-machine", "attila"]) == 0
    notes = json.loads(out.read_text())["notes"]
    assert any("measurements on 'attila' (Fermi C2050), used unchanged on h100-sxm5-server's H100-SXM5-80GB" in n for n in notes)


def test_roofline_ratio_between_two_gpus(h100):
    v100 = gpu_figures(load_machine("v100-pcie-server"))
    ratio = RooflineRatio(v100, h100, "single")
    gemm = _query(2.0 * 960**3, 3 * 3686400)  # compute-bound on both: ratio of the FP32 FMA peaks
    assert ratio(gemm) == pytest.approx(v100.fma["fp32"] / H100_FP32_FMA, rel=1e-12)
    copy = _query(1e3, 1 << 30)  # memory-bound on both: ratio of the DRAM bandwidths
    assert ratio(copy) == pytest.approx(v100.bandwidth["dram"] / H100_DRAM, rel=1e-12)
    assert ratio(_query(1e9, 1000, kind="cpu")) == 1.0
    assert RooflineRatio(h100, h100)(gemm) == 1.0


@pytest.mark.shared
def test_scaled_models_scale_means_deviations_and_say_so(starpu_data, h100):
    """Mechanics of ``scale`` (the ratio here pretends attila's models were measured on a V100)."""
    folder = starpu_data / "sampling" / "codelets" / "45"
    plain = KernelModels(folder, "attila")
    ratio = RooflineRatio(gpu_figures(load_machine("v100-pcie-server")), h100)
    scaled = KernelModels(folder, "attila", scale=ratio)
    args = ("chol_model_gemm", "cuda", 0, 11059200)
    f = ratio(_query(2.0 * 960**3, 11059200))
    assert scaled.expected_s(*args, flops=2.0 * 960**3) == pytest.approx(plain.expected_s(*args, flops=2.0 * 960**3) * f, rel=1e-15)
    assert scaled.deviation_s(*args) == pytest.approx(plain.deviation_s(*args) * f, rel=1e-15)
    assert any(n.startswith("kernel durations measured on Tesla V100") for n in scaled.notes)
    assert any(n.startswith("chol_model_gemm, 11059200 B on cuda: measured time x 0.2093") for n in scaled.notes)


@pytest.mark.shared
def test_cli_kernels_measured_on_needs_the_simulated_gpu(tmp_path, capsys, starpu_data):
    starpu = ["simulate", "cholesky", "--size", "9600", "--starpu-dir", str(starpu_data / "sampling"), "--starpu-machine", "attila"]
    assert main([*starpu, "--kernels-measured-on", "v100-pcie-server"]) == 2
    assert "needs the simulated GPU's peaks" in capsys.readouterr().err
    base, fast = tmp_path / "base.json", tmp_path / "fast.json"
    assert main([*starpu, "--json", str(base)]) == 0
    scaled = ["--kernels-measured-on", "v100-pcie-server", "--roofline-gpu", "h100-sxm5-server", "--json", str(fast)]
    assert main([*starpu, *scaled]) == 0
    b, f = json.loads(base.read_text()), json.loads(fast.read_text())
    assert f["makespan_s"] < 0.5 * b["makespan_s"]  # kernels 4.8x shorter, transfers unchanged
    # every Cholesky kernel is compute-bound on both GPUs: one factor, the ratio of the FP32 FMA peaks (14 and 66.9 TFLOP/s)
    factors = {n.split(" x ")[-1] for n in f["notes"] if ": measured time x " in n}
    assert factors == {f"{14e12 / H100_FP32_FMA:.4g}"}
    assert not any("used unchanged" in n for n in f["notes"])


def test_registered_models_build_only_when_their_option_asks(h100):
    """``roofline-missing`` builds the fallback on the simulated GPU with --roofline-missing, ``roofline-ratio`` the
    scale from the machine named by --kernels-measured-on; each builds nothing without its option."""
    from nodecast.models.task_kernel import TaskKernelRequest
    from nodecast.models.task_roofline import RooflineMissingModel, RooflineRatioModel

    bare = TaskKernelRequest("attila", target=h100)
    assert RooflineMissingModel().build(bare) is None and RooflineRatioModel().build(bare) is None
    fallback = RooflineMissingModel().build(TaskKernelRequest("attila", roofline_missing=True, target=h100))
    assert fallback(_query(2.0 * 960**3, 3 * 3686400)) == RooflineKernelTimes(h100)(_query(2.0 * 960**3, 3 * 3686400))
    scale = RooflineRatioModel().build(TaskKernelRequest("attila", target=h100, measured_on="v100-pcie-server"))
    assert scale.label.startswith("measured on Tesla V100") and scale(_query(2.0 * 960**3, 11059200)) < 1
