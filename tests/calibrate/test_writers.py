"""Writers: Google-Benchmark JSON of the points, and a Machine TOML that loads and feeds the transfer models."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pytest

from nodecast.calibrate import derive_measured, run_plan
from nodecast.calibrate import writers as W
from nodecast.errors import InputError
from nodecast.machines import load_machine, load_machine_file
from nodecast.models.transfer import AheadModel
from nodecast.traces import CopyKind, MemKind, OpKind, Trace

PROV = W.Provenance(origin="nodecast calibrate test", date="2025-01-02T03:04:05Z",
                    driver="NVIDIA driver 550.54.15, CUDA driver API 12.4", gpu_name="Fake H100",
                    facts={"cpu_governor": "performance on all 2 CPUs"})


@pytest.fixture
def run(quick_plan, measurer):
    """(plan, results, measured values) of a quick fake run."""
    results = run_plan(quick_plan, measurer)
    return quick_plan, results, derive_measured(quick_plan, results)


def write_machine(tmp_path, values, base="titan", name="titan-measured"):
    """Write a machine file from ``values`` on ``base``; returns its path and the Machine."""
    b = load_machine(base)
    doc = W.machine_document(b, W.measured_table(values, PROV), name=name, description="measured here")
    path = tmp_path / "m.toml"
    return path, W.write_machine_toml(path, doc, W.machine_header(b, PROV))


# -- TOML --------------------------------------------------------------------------------------


def test_toml_round_trip():
    """Nested tables, arrays of tables, quoted keys, floats, ints, strings and arrays read back equal."""
    doc = {"a": 1, "b": 2.5e-06, "c": "x \"quoted\" ü", "d": [1, 2, 3], "big": 1.23e12, "t": {"k": True, "weird key": 0.1},
           "nested": {"inner": {"v": [1.5, 2.5]}}, "arr": [{"id": "x", "n": 1}, {"id": "y", "n": 2}]}
    assert tomllib.loads(W.toml_dumps(doc)) == doc


def test_toml_floats_are_exact_and_readable():
    """Floats read back bit-for-bit and large ones are written in scientific notation."""
    for v in (2.2e9, 799999999999.9996, 3.00000125e-06, 0.1, 123456.0, 5e-5):
        assert tomllib.loads(W.toml_dumps({"v": v}))["v"] == v
    assert W.toml_dumps({"v": 2.2e9}) == "v = 2.2e9\n"


def test_toml_refuses_nan():
    """NaN has no place in a machine file."""
    with pytest.raises(ValueError, match="finite"):
        W.toml_dumps({"v": math.nan})


# -- Machine TOML ------------------------------------------------------------------------------


def test_machine_file_loads_with_the_measured_values(tmp_path, run):
    """The written file loads with load_machine_file and carries every class, curve, GPU maximum and fact."""
    plan, _, values = run
    path, machine = write_machine(tmp_path, values)
    loaded = load_machine_file(path)
    m = loaded.measured
    assert loaded.name == "titan-measured" and m.origin == "nodecast calibrate test"
    assert (m.date, m.driver, m.gpu_name) == (PROV.date, PROV.driver, PROV.gpu_name)
    for klass, cv in values.classes.items():
        assert m.one_byte_s[klass] == cv.one_byte_s
        assert m.bandwidth_bps[klass] == cv.bandwidth_bps
        assert m.curves[klass].sizes_bytes == tuple(float(s) for s in cv.sizes_bytes)
    assert m.gpu_peak_flops["fp32"].fma == values.peak_flops["fp32"][0]
    assert m.gpu_level_bandwidth_bps == values.level_bandwidth_bps
    assert m.facts["cpu_governor"] == "performance on all 2 CPUs"
    assert "one_byte_s = median time of 1 B" in m.facts["source.htod_pinned"]
    assert m.facts["measured_on"] == "GPU 0, host memory on NUMA node 0"
    assert machine == loaded


def test_non_measured_part_is_the_base_machine(tmp_path, run):
    """cpu, gpu and links are the base machine's, unchanged."""
    _, _, values = run
    _, machine = write_machine(tmp_path, values)
    base = load_machine("titan")
    assert (machine.cpu, machine.gpu, machine.links, machine.switches) == (base.cpu, base.gpu, base.links, base.switches)


def test_base_with_a_measured_table_is_replaced(tmp_path, run):
    """A base that already has [measured] gets ours instead, with nothing of theirs left."""
    _, _, values = run
    base = next((n for n in ("v100-pcie-server", "h100-pcie-server") if _has_measured(n)), None)
    if base is None:
        pytest.skip("no catalogue machine with a [measured] table")
    path, machine = write_machine(tmp_path, values, base=base, name="x")
    assert machine.measured.origin == "nodecast calibrate test"
    assert tomllib.loads(path.read_text())["measured"]["gpu"]["origin"].startswith("nodecast calibrate test")


def _has_measured(name: str) -> bool:
    """Whether catalogue machine ``name`` exists and has a [measured] table."""
    try:
        return load_machine(name).measured is not None
    except InputError:
        return False


def test_ahead_model_uses_the_measured_one_byte_cost(tmp_path, run):
    """The ahead model projects a 1-byte pinned copy on the written machine with its measured 1-byte cost."""
    _, _, values = run
    _, target = write_machine(tmp_path, values)
    trace = Trace.from_columns({"kind": np.array([OpKind.MEMCPY]), "copy_kind": np.array([CopyKind.HTOD]),
                                "src_mem": np.array([MemKind.PINNED]), "dst_mem": np.array([MemKind.DEVICE]),
                                "bytes": np.array([1]), "start_ns": np.array([0]), "end_ns": np.array([5000])})
    model = AheadModel()
    lo = model.one_byte(trace, load_machine("titan"), target)
    (klass,) = lo.seconds
    assert lo.origin[klass] == "target"
    assert lo.seconds[klass] == values.classes["htod_pinned"].one_byte_s
    result = model.project(trace, load_machine("titan"), target)
    assert result.time_s[0] > values.classes["htod_pinned"].one_byte_s


def test_invalid_machine_is_never_written(tmp_path, run):
    """A document the loader rejects raises its InputError and leaves no file."""
    _, _, values = run
    base = load_machine("titan")
    table = W.measured_table(values, PROV)
    table["one_byte_s"]["htod_pinned"] = -1.0
    doc = W.machine_document(base, table, name="bad", description="bad")
    with pytest.raises(InputError, match="one_byte_s.htod_pinned"):
        W.write_machine_toml(tmp_path / "bad.toml", doc)
    assert list(tmp_path.iterdir()) == []


def test_classes_without_bandwidth_still_give_a_one_byte_cost(tmp_path, fakes, measurer):
    """A one-size sweep writes a 1-byte cost and a curve but no bandwidth, and the fact says why."""
    from nodecast.calibrate import plan as P

    plan = P.build_plan(fakes.topology(1), P.Options(max_bytes=1, budget=fakes.TINY,
                                                      families=("cudaMemcpyAsync_PinnedToGPU",)))
    values = derive_measured(plan, run_plan(plan, measurer))
    _, machine = write_machine(tmp_path, values)
    assert "htod_pinned" in machine.measured.one_byte_s and "htod_pinned" not in machine.measured.bandwidth_bps
    assert "no bandwidth" in machine.measured.facts["source.htod_pinned"]


# -- Google Benchmark JSON ---------------------------------------------------------------------


def test_benchmark_json_layout(run):
    """Context with Google Benchmark's keys; per point one iteration entry and six aggregates, valid strict JSON."""
    plan, results, _ = run
    doc = json.loads(W.dumps_json(W.benchmark_document(results, plan, {"cuda_driver_version": "12.4"})))
    ctx = doc["context"]
    for key in ("date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "caches",
                "load_avg", "library_build_type", "cuda_driver_version", "nodecast_budget"):
        assert key in ctx
    entries = doc["benchmarks"]
    assert len(entries) == 7 * len(results)
    first = entries[0]
    assert first["name"] == "Comm_cudaMemcpyAsync_HostToGPU_flush/0/0/0"
    assert first["run_type"] == "iteration" and first["time_unit"] == "ns"
    assert {e["aggregate_name"] for e in entries[1:7]} == {"mean", "median", "stddev", "cv", "min", "max"}
    assert all(e["run_name"] == first["name"] for e in entries[:7])


def test_benchmark_json_numbers(fakes, run):
    """real_time is the mean in ns, bytes the copy size and bytes_per_second bytes / mean; a duplex moves 2 x bytes."""
    _, results, _ = run
    entries = W.benchmark_entries(results)
    pinned = next(e for e in entries if e["name"] == "Comm_cudaMemcpyAsync_PinnedToGPU_flush/0/0/20")
    t = fakes.fake_time_s("htod_pinned", 1 << 20)
    assert pinned["real_time"] == pytest.approx(t * 1e9)
    assert pinned["bytes"] == 1 << 20 and pinned["bytes_per_second"] == pytest.approx((1 << 20) / t)
    assert pinned["cuda_id"] == 0 and pinned["numa_id"] == 0 and pinned["iterations"] == 5
    duplex = next(e for e in entries if e["name"] == "Comm_cudaMemcpyAsync_Duplex_Pinned_flush/0/0/20")
    assert duplex["bytes"] == 1 << 20
    assert duplex["bytes_per_second"] == pytest.approx(2 * (1 << 20) / duplex["real_time"] * 1e9)
    peak = next(e for e in entries if e["name"] == "Nodecast_GPU_Peak_FMA_fp32/0")
    assert peak["flop_per_second"] == pytest.approx(fakes.FMA_FLOPS)
    cv = next(e for e in entries if e["name"].endswith("/0/0/20_cv") and "PinnedToGPU" in e["name"])
    assert cv["aggregate_unit"] == "percentage" and "bytes_per_second" not in cv


def test_failed_points_are_error_entries(fakes, quick_plan):
    """A failed point is one entry with error_occurred and the message, as Google Benchmark writes a skip."""
    results = run_plan(quick_plan, fakes.FakeMeasurer(fail={"GPU_Peak_FMA_bf16": "compile error"}))
    entry = next(e for e in W.benchmark_entries(results) if e["name"] == "Nodecast_GPU_Peak_FMA_bf16/0")
    assert entry["error_occurred"] is True and entry["error_message"] == "compile error"
    assert entry["iterations"] == 0


def test_benchmark_json_is_written_atomically(tmp_path, run):
    """The JSON lands at the path in one piece and parses."""
    plan, results, _ = run
    path = tmp_path / "r.json"
    W.write_benchmark_json(path, W.benchmark_document(results, plan, {}))
    assert json.loads(path.read_text())["benchmarks"]
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
