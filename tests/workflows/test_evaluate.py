"""Tests for nodecast.workflows.evaluate: op alignment and AHEAD's WMAPE."""

import numpy as np
import pytest

from nodecast.workflows.evaluate import align, ape, weighted_errors, wmape
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import Trace


def _copies(sizes, stream=7, device=0, start=0):
    n = len(sizes)
    starts = start + np.arange(n) * 1000
    return Trace.from_columns({
        "kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, CopyKind.HTOD),
        "src_mem": np.full(n, MemKind.PINNED), "dst_mem": np.full(n, MemKind.DEVICE),
        "bytes": sizes, "start_ns": starts, "end_ns": starts + 500,
        "stream": np.full(n, stream), "device": np.full(n, device),
    })


def test_wmape_is_sum_of_weighted_errors():
    """WMAPE equals 100 * sum|A-P| / sum(A), the sum of AHEAD's per-op weighted errors."""
    a = np.array([1.0, 3.0])
    p = np.array([2.0, 3.0])
    assert wmape(a, p) == pytest.approx(100 * 1 / 4)
    assert weighted_errors(a, p).sum() == pytest.approx(wmape(a, p))
    assert ape(a, p).tolist() == pytest.approx([100.0, 0.0])


def test_identical_runs_align_fully_even_with_other_stream_ids():
    """Two runs with the same ops but different stream ids align one to one."""
    a = _copies([1, 2, 3, 4], stream=7)
    b = _copies([1, 2, 3, 4], stream=14)
    al = align(a, b)
    assert al.index_a.tolist() == [0, 1, 2, 3]
    assert al.index_b.tolist() == [0, 1, 2, 3]
    assert len(al.unmatched_a) == len(al.unmatched_b) == 0


def test_inserted_op_is_reported_and_the_rest_realigned():
    """An op present only in B is reported unmatched; the ops after it still pair by bytes."""
    a = _copies([10, 20, 30, 40])
    b = _copies([10, 20, 99, 30, 40])
    al = align(a, b)
    pairs = dict(zip(al.index_a.tolist(), al.index_b.tolist(), strict=True))
    assert pairs == {0: 0, 1: 1, 2: 3, 3: 4}
    assert al.unmatched_b.tolist() == [2]
    assert al.realigned_groups == 1


def test_kinds_never_pair_with_each_other():
    """A kernel in A cannot pair with a copy in B."""
    a = Trace.from_columns({"kind": [OpKind.KERNEL], "start_ns": [0], "end_ns": [5]})
    b = _copies([8])
    al = align(a, b)
    assert len(al.index_a) == 0
    assert al.unmatched_a.tolist() == [0] and al.unmatched_b.tolist() == [0]


# -- nothing to evaluate; host memory kinds one profiler does not record ------------------------
from nodecast.workflows.evaluate import NothingToEvaluate, evaluate  # noqa: E402
from nodecast.machines import load_machine  # noqa: E402
from nodecast.traces.kineto import kineto_from_document, read_kineto  # noqa: E402


def test_nothing_evaluable_says_why(shared_traces):
    """The H100/MI300X Kineto pair (kernels only, no metrics) with the transfer models and the roofline (the
    metrics-free kernel models would project it) raises one sentence: kinds, pairs, idle models."""
    from nodecast.models.registry import model_names

    a = read_kineto(shared_traces / "kineto_nsfw-image-detection_h100.json.gz")
    b = read_kineto(shared_traces / "kineto_nsfw-image-detection_mi300x.json.gz")
    with pytest.raises(NothingToEvaluate) as err:
        evaluate(a, b, load_machine("h100-sxm5-server"), load_machine("h200-node"),
                 [*model_names("transfer"), "roofline", "plain-roofline"])
    message = err.value.message
    assert "\n" not in message
    for words in ("A has kernel x154, memset x2", "B has kernel x155", "150 op pairs aligned (kernel x150)",
                  "unmatched: kernel x4, memset x2 in A; kernel x5 in B", "no model projected any op of A",
                  "ahead, ahead-no-latency, ahead-eq9, peak-bandwidth, back-of-envelope, ahead-scaled, "
                  "peak-bandwidth-scaled (no copies this model handles",
                  "no Nsight Compute metrics given", "Give --metrics"):
        assert words in message, words


def _kineto_copy(name, nbytes, dur_us, api=None, rocm=False):
    """A Kineto document (format of pytorch/kineto's CUPTI and ROCm writers) with one copy and its API call."""
    events = [{"ph": "X", "cat": "gpu_memcpy", "name": name, "pid": 0, "tid": 7, "ts": 100, "dur": dur_us,
               "args": {"device": 0, "stream": 7, "correlation": 5, "bytes": nbytes}}]
    if api is not None:
        events.append({"ph": "X", "cat": "cuda_runtime", "name": api[0], "pid": 1, "tid": 1, "ts": 99, "dur": 3,
                       "args": {"correlation": 5, "bytes": str(nbytes), "kind": str(api[1])}})
    doc = {"traceEvents": events}
    if rocm:
        doc["roctracer_version"] = 4.1
    return kineto_from_document(doc, source="rocm.json" if rocm else "cuda.json")


def test_rocm_copy_aligns_with_its_cuda_twin_and_keeps_its_one_byte_cost():
    """A 1-byte DtoH copy (pinned on CUDA, labelled DtoD by ROCm) pairs across vendors and keeps its 2.24 µs L+O."""
    a = _kineto_copy("Memcpy DtoH (Device -> Pinned)", 1, "2.240")
    b = _kineto_copy("Memcpy DtoD (Device -> Device)", 1, "2.500", api=("hipMemcpyWithStream", 2), rocm=True)
    ev = evaluate(a, b, load_machine("h100-sxm5-server"), load_machine("h200-node"), ["ahead"])
    assert len(ev.actual_s) == 1 and ev.category.tolist() == ["dtoh_pinned"]
    # L+O is the copy's own latency-bound time (less its 1 B of wire time), not 0: 2.24 µs, not 0.4 ns
    assert ev.projected_s["ahead"][0] == pytest.approx(2.24e-6, rel=1e-3)
    assert any("pinned or pageable" in n and "paired by direction alone" in n for n in ev.notes)


def test_unknown_host_memory_pairs_by_direction_only():
    """When one trace does not record pinned/pageable, host copies pair by direction; otherwise by class."""
    pinned = _copies([8, 16])
    unknown = Trace.from_columns({**{k: pinned[k] for k in pinned.columns}, "src_mem": np.zeros(2, np.int8)})
    pageable = Trace.from_columns({**{k: pinned[k] for k in pinned.columns},
                                   "src_mem": np.full(2, MemKind.PAGEABLE, np.int8)})
    assert align(pinned, unknown).index_a.tolist() == [0, 1]
    assert align(pinned, pageable).index_a.tolist() == []  # both recorded, and they differ: not the same copies


# -- kernels of other names: paired by op, dtype and shape; else the totals ---------------------------------------
def _op_table(device, rows):
    """A Trace of op-table rows (op, name, m, n, k, duration_s) on GPU ``device``, fp32."""
    import pandas as pd

    from nodecast.traces import op_table

    frame = pd.DataFrame(rows, columns=["op", "name", "m", "n", "k", "duration_s"]).assign(device=device, dtype="fp32")
    return op_table.to_trace(op_table.check_frame(frame), f"{device}.csv")


def test_kernels_of_other_names_pair_by_op_dtype_and_shape():
    """Where cuBLAS picked other kernels on B, kernels pair by op, dtype and shape, whatever their order."""
    a = _op_table("Tesla T4", [("gemm", "turing_sgemm_a", 64, 64, 64, 1e-5),
                               ("gemm", "turing_sgemm_b", 128, 64, 64, 2e-5),
                               ("bmm", "turing_sgemm_a", 64, 64, 64, 3e-5)])
    b = _op_table("Tesla V100-PCIE-32GB", [("bmm", "volta_sgemm_x", 64, 64, 64, 3e-5),
                                           ("gemm", "volta_sgemm_y", 128, 64, 64, 1e-5),
                                           ("gemm", "volta_sgemm_z", 64, 64, 64, 1e-5)])
    al = align(a, b)
    assert dict(zip(al.index_a.tolist(), al.index_b.tolist(), strict=True)) == {0: 2, 1: 1, 2: 0}
    assert al.by_work == 3 and any("by op, dtype and shape" in n for n in al.notes)


def test_one_kernel_name_on_other_shapes_pairs_by_shape_not_by_launch_order():
    """A library kernel that ran other shapes in the other run does not pair its n-th launches blindly: when both
    runs record shapes, name and shape must agree."""
    a = _op_table("Tesla T4", [("gemm", "volta_sgemm_128x64_nn", 64, 64, 64, 1e-5),
                               ("gemm", "volta_sgemm_128x64_nn", 512, 512, 512, 2e-5)])
    b = _op_table("Tesla V100-PCIE-32GB", [("gemm", "volta_sgemm_128x64_nn", 512, 512, 512, 1e-5),
                                           ("gemm", "volta_sgemm_128x64_nn", 64, 64, 64, 1e-5)])
    al = align(a, b)
    assert dict(zip(al.index_a.tolist(), al.index_b.tolist(), strict=True)) == {0: 1, 1: 0}


def test_no_pair_compares_the_kernel_totals():
    """Kernels that pair neither by name nor by shape: the evaluation compares totals only, and says so."""
    a = _op_table("Tesla T4", [("gemm", "turing_a", None, None, None, 1e-3), ("gemm", "turing_b", None, None, None,
                                                                             2e-3)])
    b = _op_table("Tesla V100-PCIE-32GB", [("gemm", "volta_a", None, None, None, 5e-4)])
    ev = evaluate(a, b, load_machine("t4"), load_machine("v100-pcie-32gb"), ["dram-ratio"])
    assert ev.totals_only and len(ev.alignment.index_a) == 0
    kernels = ev.kernels().set_index("model")
    assert kernels.loc["unchanged", "projected_s"] == pytest.approx(3e-3)
    assert kernels.loc["unchanged", "actual_s"] == pytest.approx(5e-4)
    assert any("compared the totals only" in str(n) for n in ev.notes)
    assert any("compared the totals only" in n.label for n in ev.headline())


def test_a_host_assumed_for_both_runs_is_said_once(shared_traces):
    """Two traces that name no host: A's and B's nodes are composed with the one default host, and the notes
    say so once (it was said for A and again for B)."""
    from nodecast.workflows.evaluate import evaluate
    from nodecast.machines.resolve import resolve_source
    from nodecast.traces.load import load_trace

    zoo = shared_traces.parent / "kernel-zoo"
    a, b = load_trace(zoo / "Titan" / "vectorAdd-1048576.csv"), load_trace(zoo / "GTX-970" / "vectorAdd-1048576.csv")
    ev = evaluate(a, b, resolve_source(a, None), resolve_source(b, None), ["default-kernel"])
    host = [n for n in ev.all_notes() if "host assumed" in n]
    assert len(host) == 1 and "A and B alike" in host[0]
