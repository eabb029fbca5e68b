"""The source run is the calibration by default (issue 19 deliverable 1): a forecast onto A's own node gives A's
times back, op for op; a GPU alone as --to is A's node with that GPU; every forecast says what it kept and changed,
and shows the unchanged case beside its answer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nodecast.cli import main
from nodecast.models.registry import model_chains
from nodecast.workflows.forecast import forecast, read_trace_and_api
from nodecast.workflows.targets import target_machine
from nodecast.machines import load_machine, resolve_source
from nodecast.machines.compose import same_host

ZOO_MATMUL = "kernel-zoo/Titan/matMul_gpu-1024.csv"
#: One trace per reader: nsys SQLite (one with memsets), nvprof SQLite, Kineto JSON, nvprof GPU-trace CSV (two).
SAME_NODE_TRACES = ["traces/nsys_vectoradd-streams_t4.sqlite", "traces/nsys_sptrsv-levelset-ca_t4.sqlite",
                    "traces/nvprof_vectoradd-1M_t4.nvvp", "traces/kineto_alexnet-benchmark_a100.json.gz",
                    "traces/nvprof-gputrace-csv_vectoradd_k40c.csv", ZOO_MATMUL]


@pytest.fixture(scope="module")
def data(shared_dir):
    """../shared/data (the traces folder's parent)."""
    return shared_dir.parent


def test_default_chain_is_the_source_run_as_calibration():
    """Without --models, copies are ahead-scaled (A's measured time x ahead(B)/ahead(A)), not the absolute ahead."""
    assert model_chains(None)["transfer"] == ["ahead-scaled"]
    assert model_chains(None)["kernel"] == ["default-kernel"]


@pytest.mark.parametrize("name", SAME_NODE_TRACES)
def test_forecast_onto_a_itself_keeps_every_op_time(data, name):
    """--from X --to X: every op (kernels, copies, memsets, host work) keeps its measured time exactly, with no
    interval, and the end to end is the replay on A; whether B is A itself, A's GPU named alone, or A's
    GPU@HOST spelled out."""
    trace, api = read_trace_and_api(data / name)
    source = resolve_source(trace, None)
    gpu = source.gpu.sheet.key
    for target in (source, target_machine(gpu, source), target_machine(source.name, source)):
        r = forecast(trace, api, source, target)
        src = r.graph.ops["source_dur_s"]
        assert np.array_equal(r.costs.duration_s, src), (name, target.name)
        assert np.array_equal(r.costs.low_s, src) and np.array_equal(r.costs.high_s, src)
        assert r.end_to_end_s == r.replayed_end_to_end_s
        assert r.change.same and r.change.text.startswith("B is A's node unchanged")


def test_gpu_alone_is_a_node_with_a_host_kept(data):
    """--from titan --to gtx-970: the GTX 970 in Titan's node (its Opteron host, its PCIe gen2 x16 slot), not in
    the default host; the copies of the AHEAD bandwidth test cross the same link and keep their time."""
    titan = load_machine("titan")
    b = target_machine("gtx-970", titan)
    assert b.name == "gtx-970@titan" and b.gpu.model == "NVIDIA GeForce GTX 970"
    assert same_host(titan, b) and b.cpu == titan.cpu
    assert (b.host_link().kind, b.host_link().gen, b.host_link().lanes) == ("pcie", 2, 16)
    assert not same_host(titan, load_machine("gtx-970"))  # naming a GPU@HOST or a file changes the host
    trace, api = read_trace_and_api("sample:nvprof_ahead-bandwidthtest-htod-pageable_titan-k20x")
    r = forecast(trace, api, resolve_source(trace, "titan"), b)
    copy = r.graph.ops["kind"] == 1
    np.testing.assert_allclose(r.costs.duration_s[copy], r.graph.ops["source_dur_s"][copy], rtol=1e-12)


def test_gpu_count_in_a_gpu_alone():
    """``GPUxN`` alone: A's node with N such GPUs, named with A's host, each GPU on A's slot."""
    titan = load_machine("titan")
    b = target_machine("gtx-970x2", titan)
    assert b.gpu.count == 2 and b.name == "gtx-970x2@titan" and same_host(titan, b)
    assert {(b.host_link(g).kind, b.host_link(g).gen) for g in range(2)} == {("pcie", 2)}


def _run(capsys, *argv: str) -> str:
    assert main(["forecast", *argv]) == 0
    return capsys.readouterr().out


def test_host_assumed_is_said_once_when_shared(data, capsys):
    """Titan -> GTX 970 with no host named: one note says A and B share the assumed host and that its figures
    cancel in the ratios (it was said twice, once per node)."""
    out = _run(capsys, str(data / ZOO_MATMUL), "--to", "gtx-970", "--notes", "all")
    lines = [x for x in out.splitlines() if "host assumed" in x]
    assert len(lines) == 1
    assert "host assumed for A and B alike: xeon-platinum-8480c-2s" in lines[0]
    assert "as only the GPU changes, the host's figures cancel in the ratios B/A" in lines[0]


CHANGE_970 = ("B is A's node with the GPU changed: NVIDIA GeForce GTX TITAN -> NVIDIA GeForce GTX 970 (host link PCIe "
              "gen3 x16 both); kept as measured: host work, host copy rate, 1-byte costs; moved by the models' ratio "
              "B/A: copies (ahead-scaled), kernels (default-kernel)")


def test_every_forecast_says_what_it_kept_and_changed(data, capsys, tmp_path):
    """One line right under the title, the same in --json and on the --html page; the headline table labels A's
    replayed times as the unchanged case; the copies keep their time (same host, same link)."""
    path = str(data / ZOO_MATMUL)
    lines = _run(capsys, path, "--to", "gtx-970").splitlines()
    assert lines[1] == CHANGE_970
    assert "unchanged (A's times)" in lines[4]
    doc = json.loads(_run(capsys, path, "--to", "gtx-970", "--json"))
    assert doc["change"]["text"] == CHANGE_970
    assert doc["change"]["moved_by_ratio"] == {"copies": ["ahead-scaled"], "kernels": ["default-kernel"]}
    copies = [c for c in doc["categories"] if c["category"].startswith("copies")]
    assert copies and all(c["target_s"] == pytest.approx(c["source_s"], rel=1e-12) for c in copies)
    page = tmp_path / "f.html"
    assert main(["forecast", path, "--to", "gtx-970", "--html", str(page)]) == 0
    html = page.read_text()
    assert "B is A&#x27;s node with the GPU changed" in html or "B is A's node with the GPU changed" in html
    assert "unchanged (A&#x27;s times)" in html or "unchanged (A's times)" in html


def test_absolute_models_are_said_so(data, capsys):
    """--models ahead,default-kernel: the copies' times come from the machines, and the line says so."""
    out = _run(capsys, str(data / ZOO_MATMUL), "--to", "gtx-970", "--models", "ahead,default-kernel")
    assert out.splitlines()[1].endswith("moved by the models' ratio B/A: kernels (default-kernel); set by absolute "
                                        "models (from the machines, not A's times): copies (ahead)")


def test_several_targets_show_the_unchanged_case_first(data, capsys):
    """--to a,b: the table's first row is the unchanged case (A's times replayed), then each target; a line per
    target says what it kept and changed."""
    out = _run(capsys, str(data / ZOO_MATMUL), "--to", "gtx-970,titan", "--jobs", "1")
    lines = out.splitlines()
    assert lines[1] == f"gtx-970: {CHANGE_970}"
    assert lines[2].startswith("titan: B is another node: GPU NVIDIA GeForce GTX TITAN -> Tesla K20X, host "
                               "xeon-platinum-8480c-2s -> opteron-6274-titan (host link PCIe gen3 x16 -> PCIe gen2 "
                               "x16)")
    rows = [x for x in lines if x.startswith("│")]
    assert rows[0].startswith("│ unchanged (A's times) │    22.2 ms │ —")
    assert rows[1].startswith("│ gtx-970") and rows[2].startswith("│ titan")


def test_forecast_onto_a_itself_with_metrics_keeps_every_kernel_time(data):
    """--metrics: the roofline gives each kernel the run's time x roofline(B) / roofline(A), so onto A itself every
    kernel keeps its measured time, although Nsight Compute's own times (taken at locked clocks) are not the run's
    (here the run is 20 % faster than ncu's replay)."""
    from nodecast.traces.api import ApiCalls
    from nodecast.cost.ops import CostOptions
    from nodecast.traces.ncu import read_ncu_csv, trace_from_metrics
    from nodecast.traces.trace import Trace

    files = sorted((data / "traces").glob("ncu-csv_v100_*.csv"))
    if len(files) != 12:
        pytest.skip("the 12 ncu-csv_v100_* files are absent")
    metrics = read_ncu_csv(files)
    ncu = trace_from_metrics(metrics)
    dur = np.maximum(np.rint(ncu.duration_ns * 0.8), 1).astype(np.int64)
    end = np.cumsum(dur)
    trace = Trace.from_columns({"kind": ncu["kind"], "start_ns": end - dur, "end_ns": end, "name_id": ncu["name_id"],
                                "correlation": ncu["correlation"]}, ncu.names, ncu.meta, sort=False)
    v100 = load_machine("v100-sxm2-16gb")
    r = forecast(trace, ApiCalls.empty(), v100, target_machine("v100-sxm2-16gb", v100), CostOptions(metrics=metrics))
    assert set(r.costs.model_of()[r.graph.gpu_mask()]) == {"default-kernel"}
    assert np.array_equal(r.costs.duration_s, r.graph.ops["source_dur_s"])
    assert r.end_to_end_s == r.replayed_end_to_end_s
