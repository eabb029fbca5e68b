"""Kineto kernels take the op class, dtype, shape, FLOP and bytes of the aten op that launched them (record_shapes).

Synthetic traces follow the PyTorch profiler's layout (names and args as in ../shared/data/traces/kineto_*.json.gz):
a ``cpu_op`` with ``Input Dims``/``Input type`` (and, in newer PyTorch, ``Concrete Inputs``), the
``cudaLaunchKernel`` it makes (``cuda_runtime``, same thread, inside its time span) and the ``kernel`` with the
launch's correlation id.
"""

from __future__ import annotations

import gzip
import json
from bisect import bisect_right
from decimal import Decimal

import numpy as np
import pytest

from nodecast.traces.kineto import kineto_from_document, read_kineto
from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import DType, OpClass

PID = 5617


def _op(name: str, dims: list | None = None, types: list | None = None, concrete: list | None = None,
        kernels: int = 1, inner: tuple = ()) -> dict:
    """One aten op of a synthetic trace: its args, how many kernels it launches itself, the ops it calls."""
    return {"name": name, "dims": dims, "types": types, "concrete": concrete, "kernels": kernels, "inner": inner}


def _doc(*ops: dict, new_pytorch: bool = True, first_external_id: int = 1538, first_correlation: int = 56573
         ) -> tuple[dict, dict[str, list[int]]]:
    """A Kineto document of ``ops`` (each launched one after another on one thread) and, per op name, the
    correlation ids of the kernels it launched.

    ``new_pytorch``: kernels and launches carry the op's ``External id`` (PyTorch 2.x), else their own
    correlation id as in the A100 sample (PyTorch 1.x: only time links a kernel to its op), and no
    ``Concrete Inputs``.
    """
    events: list[dict] = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#6", "pid": PID, "tid": PID,
                           "ts": 0, "dur": 10**6, "args": {"External id": first_external_id - 1}}]
    launched: dict[str, list[int]] = {}
    state = {"t": 1000, "ext": first_external_id, "corr": first_correlation}

    def emit(op: dict) -> None:
        start = state["t"]
        ext = state["ext"]
        state["ext"] += 1
        state["t"] += 2
        for child in op["inner"]:
            emit(child)
        for _ in range(op["kernels"]):
            corr = state["corr"]
            state["corr"] += 1
            link = ext if new_pytorch else corr
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": PID,
                           "ts": state["t"], "dur": 4, "args": {"External id": link, "cbid": 211,
                                                                "correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": f"kernel_of_{op['name']}", "pid": 0, "tid": 7,
                           "ts": 500_000 + 10 * corr, "dur": 5,
                           "args": {"External id": link, "queued": 0, "device": 0, "context": 1, "stream": 7,
                                    "correlation": corr, "registers per thread": 32, "shared memory": 0,
                                    "grid": [8, 1, 1], "block": [256, 1, 1]}})
            launched.setdefault(op["name"], []).append(corr)
            state["t"] += 6
        state["t"] += 2
        args: dict = {"External id": ext, "Record function id": 0}
        if op["dims"] is not None:
            args["Input Dims"] = op["dims"]
            args["Input type"] = op["types"]
            if new_pytorch and op["concrete"] is not None:
                args["Concrete Inputs"] = op["concrete"]
        events.append({"ph": "X", "cat": "cpu_op", "name": op["name"], "pid": PID, "tid": PID, "ts": start,
                       "dur": state["t"] - start, "args": args})
        state["t"] += 3

    for op in ops:
        emit(op)
    return {"schemaVersion": 1, "record_shapes": 1, "traceEvents": events}, launched


def _row(trace, correlation: int) -> int:
    """The trace row of the kernel with this correlation id."""
    (rows,) = np.nonzero((trace["correlation"] == correlation) & (trace["kind"] == OpKind.KERNEL))
    assert len(rows) == 1
    return int(rows[0])


def _work(trace, row: int) -> tuple:
    """(op class, dtype, flops, work_bytes, batch, m, n, k) of one row."""
    return (OpClass(int(trace["op_class"][row])), DType(int(trace["dtype"][row])), float(trace["flops"][row]),
            float(trace["work_bytes"][row]), *(int(trace[c][row]) for c in ("batch", "m", "n", "k")))


def _same(got: tuple, expected: tuple) -> bool:
    """Equal, NaN equal to NaN (FLOP and bytes compared to 1e-12 relative)."""
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected, strict=True):
        if isinstance(e, float):
            if not (np.isnan(g) and np.isnan(e)) and not np.isclose(g, e, rtol=1e-12, atol=0):
                return False
        elif g != e:
            return False
    return True


NAN = float("nan")
BF16 = "c10::BFloat16"


def test_linear_kernel_takes_the_shape_of_the_addmm_that_launched_it():
    """aten::linear calls aten::addmm, which launches the GEMM (the ViT-B/16 layer of the H100 sample): the kernel is
    a bf16 GEMM of m=788, n=768, k=768, 2mnk FLOP and e(mk + kn + mn) bytes (the bias not counted)."""
    addmm = _op("aten::addmm", [[768], [788, 768], [768, 768], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"],
                ["", "", "", "1", "1"])
    linear = _op("aten::linear", [[4, 197, 768], [768, 768], [768]], [BF16] * 3, ["", "", ""], kernels=0,
                 inner=(_op("aten::t", [[768, 768]], [BF16], [""], kernels=0), addmm))
    doc, launched = _doc(linear)
    trace = kineto_from_document(doc)
    m, n, k = 788, 768, 768
    expected = (OpClass.GEMM, DType.BF16, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n), 1, m, n, k)
    assert _same(_work(trace, _row(trace, launched["aten::addmm"][0])), expected)


def test_old_traces_link_kernels_to_ops_by_time():
    """PyTorch 1.x traces (the A100 sample) give kernels their correlation id as External id: the op is the
    innermost cpu_op on the launching thread whose span holds the launch; an External id that happens to equal
    another op's is not taken (that op does not hold the launch)."""
    ops = [_op("aten::fill_", [[1], []], ["long", "Scalar"]), _op("aten::mm", [[4096, 64], [64, 2798]], ["float"] * 2)]
    # fill_ is op 2 and launches correlation 1; mm is op 3 and launches correlation 2, the External id of fill_.
    doc, launched = _doc(*ops, new_pytorch=False, first_external_id=2, first_correlation=1)
    launched_mm = launched["aten::mm"][0]
    assert [e["args"]["External id"] for e in doc["traceEvents"] if e.get("name") == "aten::fill_"] == [launched_mm]
    trace = kineto_from_document(doc)
    m, n, k = 4096, 2798, 64
    expected = (OpClass.GEMM, DType.FP32, 2.0 * m * n * k, 4.0 * (m * k + k * n + m * n), 1, m, n, k)
    assert _same(_work(trace, _row(trace, launched_mm)), expected)


def test_new_traces_link_by_external_id_without_the_launch():
    """PyTorch 2.x writes the launching op's External id on the kernel: it links the kernel even where the launch
    call is not in the trace (no time to go by)."""
    doc, launched = _doc(_op("aten::gelu", [[4, 197, 3072], []], [BF16, ""], ["", ""]))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "cuda_runtime"]
    trace = kineto_from_document(doc)
    row = _row(trace, launched["aten::gelu"][0])
    assert trace["op_class"][row] == OpClass.ELEMENTWISE and trace["flops"][row] == 788 * 3072


def test_of_two_ops_with_one_span_the_later_is_inside():
    """Integer-microsecond traces give a record function and the aten op it calls the same span (the A100 sample's
    torch::distributed::reducer::mul_out and its aten::mul): the one written later, the callee, launched the kernel."""
    mul = _op("aten::mul", [[128], [], [128]], ["float", "double", "float"])
    doc, launched = _doc(_op("torch::distributed::reducer::mul_out", [[128]], ["float"], kernels=0, inner=(mul,)),
                         new_pytorch=False)
    outer, inner = sorted((e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    inner["ts"], inner["dur"] = outer["ts"], outer["dur"]
    doc["traceEvents"].remove(outer)
    doc["traceEvents"].insert(1, outer)  # the profiler writes the caller first
    trace = kineto_from_document(doc)
    assert trace["op_class"][_row(trace, launched["aten::mul"][0])] == OpClass.ELEMENTWISE


def test_an_op_that_launches_several_kernels_gives_them_its_class_but_no_work():
    """cudnn_convolution launches layout transforms and the convolution: each kernel is a bf16 conv, and none
    carries the op's FLOP, bytes or shape (they cannot be split honestly)."""
    conv = _op("aten::cudnn_convolution", [[4, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []],
               [BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"],
               ["", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False", "True"], kernels=3)
    doc, launched = _doc(conv)
    trace = kineto_from_document(doc)
    for corr in launched["aten::cudnn_convolution"]:
        assert _same(_work(trace, _row(trace, corr)), (OpClass.CONV, DType.BF16, NAN, NAN, -1, -1, -1, -1))


# name, Input Dims, Input type, Concrete Inputs -> (class, dtype, flops, bytes, batch, m, n, k)
_CASES = {
    "mm fp32": (("aten::mm", [[4096, 64], [64, 2798]], ["float", "float"], ["", ""]),
                (OpClass.GEMM, DType.FP32, 2.0 * 4096 * 2798 * 64, 4.0 * (4096 * 64 + 64 * 2798 + 4096 * 2798),
                 1, 4096, 2798, 64)),
    "bmm fp16": (("aten::bmm", [[8, 64, 32], [8, 32, 16]], ["c10::Half"] * 2, ["", ""]),
                 (OpClass.BMM, DType.FP16, 2.0 * 8 * 64 * 16 * 32, 2.0 * 8 * (64 * 32 + 32 * 16 + 64 * 16),
                  8, 64, 16, 32)),
    "baddbmm": (("aten::baddbmm", [[8, 64, 16], [8, 64, 32], [8, 32, 16], [], []],
                 ["c10::Half"] * 3 + ["Scalar"] * 2, ["", "", "", "1", "1"]),
                (OpClass.BMM, DType.FP16, 2.0 * 8 * 64 * 16 * 32, 2.0 * 8 * (64 * 32 + 32 * 16 + 64 * 16),
                 8, 64, 16, 32)),
    "matmul 3d x 2d is a linear": (
        ("aten::matmul", [[4, 197, 768], [768, 3072]], ["c10::Half"] * 2, ["", ""]),
        (OpClass.LINEAR, DType.FP16, 2.0 * 4 * 197 * 3072 * 768,
         2.0 * (4 * 197 * 768 + 768 * 3072 + 4 * 197 * 3072), 4, 197, 3072, 768)),
    "matmul 4d x 4d is a bmm": (
        ("aten::matmul", [[2, 12, 197, 64], [2, 12, 64, 197]], ["float"] * 2, ["", ""]),
        (OpClass.BMM, DType.FP32, 2.0 * 24 * 197 * 197 * 64, 4.0 * 24 * (197 * 64 + 64 * 197 + 197 * 197),
         24, 197, 197, 64)),
    "linear": (("aten::linear", [[4, 197, 768], [3072, 768], [3072]], [BF16] * 3, ["", "", ""]),
               (OpClass.LINEAR, DType.BF16, 2.0 * 4 * 197 * 3072 * 768,
                2.0 * (4 * 197 * 768 + 3072 * 768 + 4 * 197 * 3072), 4, 197, 3072, 768)),
    "cudnn conv, one kernel": (
        ("aten::cudnn_convolution", [[4, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []],
         [BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"],
         ["", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False", "True"]),
        (OpClass.CONV, DType.BF16, 2.0 * 784 * 768 * 768, 2.0 * (4 * 3 * 224 * 224 + 768 * 768 + 4 * 768 * 14 * 14),
         1, 784, 768, 768)),
    "miopen conv": (
        ("aten::miopen_convolution", [[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []],
         [BF16, BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar"],
         ["", "", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False"]),
        (OpClass.CONV, DType.BF16, 2.0 * 784 * 768 * 768, 2.0 * (4 * 3 * 224 * 224 + 768 * 768 + 4 * 768 * 14 * 14),
         1, 784, 768, 768)),
    "convolution, stride 2 padding 1": (
        ("aten::convolution", [[1, 64, 56, 56], [128, 64, 3, 3], [128], [], [], [], [], [], []],
         ["c10::Half"] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
         ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]),
        (OpClass.CONV, DType.FP16, 2.0 * 784 * 128 * 576, 2.0 * (64 * 56 * 56 + 128 * 576 + 128 * 28 * 28),
         1, 784, 128, 576)),
    "transposed convolution: class only": (
        ("aten::convolution", [[1, 64, 56, 56], [64, 128, 3, 3], [128], [], [], [], [], [], []],
         ["c10::Half"] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
         ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]),
        (OpClass.CONV, DType.FP16, NAN, NAN, -1, -1, -1, -1)),
    "softmax over the last dim": (
        ("aten::_softmax", [[4, 12, 197, 197], [], []], [BF16, "Scalar", "Scalar"], ["", "-1", "False"]),
        (OpClass.SOFTMAX, DType.BF16, 5.0 * 4 * 12 * 197 * 197, 2.0 * 2 * 4 * 12 * 197 * 197, 1, 4 * 12 * 197, 197,
         -1)),
    "softmax, dim not recorded": (
        ("aten::_softmax", [[4, 12, 197, 197], [], []], ["float", "Scalar", "Scalar"], None),
        (OpClass.SOFTMAX, DType.FP32, 5.0 * 4 * 12 * 197 * 197, 2.0 * 4 * 4 * 12 * 197 * 197, -1, -1, -1, -1)),
    "layer norm": (
        ("aten::native_layer_norm", [[4, 197, 768], [], [768], [768], []], [BF16, "ScalarList", BF16, BF16, "Scalar"],
         ["", "[768]", "", "", "9.9999999999999998e-13"]),
        (OpClass.LAYERNORM, DType.BF16, 8.0 * 788 * 768, 2.0 * 2 * 788 * 768, 1, 788, 768, -1)),
    "layer norm, normalized shape from the weight": (
        ("aten::native_layer_norm", [[4, 197, 768], [], [768], [768], []], ["float", "", "float", "float", "Scalar"],
         None),
        (OpClass.LAYERNORM, DType.FP32, 8.0 * 788 * 768, 2.0 * 4 * 788 * 768, 1, 788, 768, -1)),
    "add with broadcast": (
        ("aten::add", [[4, 197, 768], [1, 197, 768], []], [BF16, BF16, "Scalar"], ["", "", "1"]),
        (OpClass.ELEMENTWISE, DType.BF16, 4.0 * 197 * 768, 2.0 * (4 * 197 * 768 + 197 * 768 + 4 * 197 * 768),
         1, 788, 768, -1)),
    "gelu": (("aten::gelu", [[4, 197, 3072], []], [BF16, ""], ["", ""]),
             (OpClass.ELEMENTWISE, DType.BF16, 788.0 * 3072, 2.0 * 2 * 788 * 3072, 1, 788, 3072, -1)),
    "mul by a 0-d double tensor": (
        ("aten::mul", [[4096], []], ["float", "double"], None),
        (OpClass.ELEMENTWISE, DType.FP32, 4096.0, 4.0 * 4096 + 8.0 + 4.0 * 4096, 1, 1, 4096, -1)),
    "comparison writes bools": (
        ("aten::ge", [[4096], [4096]], ["float", "float"], None),
        (OpClass.ELEMENTWISE, DType.FP32, 4096.0, 4.0 * 4096 * 2 + 4096, 1, 1, 4096, -1)),
    "sum over dim 1 of an int tensor": (
        ("aten::sum", [[6, 65536], [], [], []], ["int", "", "Scalar", ""], ["", "[1]", "False", ""]),
        (OpClass.REDUCTION, DType.UNKNOWN, 6.0 * 65536, 4.0 * (6 * 65536 + 6), 1, 6, 65536, -1)),
    "sum, dims not recorded": (
        ("aten::sum", [[6, 65536], [], [], []], ["int", "", "Scalar", ""], None),
        (OpClass.REDUCTION, DType.UNKNOWN, 6.0 * 65536, NAN, -1, -1, -1, -1)),
    "mean of everything": (
        ("aten::mean", [[4096], [], [], []], ["float", "", "Scalar", ""], ["", "", "False", ""]),
        (OpClass.REDUCTION, DType.FP32, 4096.0, 4.0 * (4096 + 1), 1, 1, 4096, -1)),
    "copy float to half": (
        ("aten::copy_", [[9, 4096], [9, 4096], []], ["c10::Half", "float", "Scalar"], ["", "", "False"]),
        (OpClass.COPY, DType.FP16, 0.0, 2.0 * 9 * 4096 + 4.0 * 9 * 4096, 1, 9, 4096, -1)),
    "flash attention (batch, seq, heads, head size)": (
        ("aten::_flash_attention_forward", [[4, 197, 12, 64]] * 3 + [[]] * 12,
         [BF16] * 3 + ["", ""] + ["Scalar"] * 6 + [""] * 4,
         ["", "", "", "", "", "197", "197", "0.", "False", "False", "0.125", "", "", "", ""]),
        (OpClass.ATTENTION, DType.BF16, 4.0 * 48 * 197 * 197 * 64, 2.0 * 4 * 48 * 197 * 64, 48, 197, 197, 64)),
    "sdpa (batch, heads, seq, head size), grouped keys": (
        ("aten::scaled_dot_product_attention", [[1, 32, 128, 64], [1, 8, 256, 64], [1, 8, 256, 64], [], [], []],
         [BF16] * 3 + ["", "Scalar", "Scalar"], ["", "", "", "", "0.", "True"]),
        (OpClass.ATTENTION, DType.BF16, 4.0 * 32 * 128 * 256 * 64,
         2.0 * (2 * 32 * 128 * 64 + 2 * 8 * 256 * 64), 32, 128, 256, 64)),
}


@pytest.mark.parametrize("case", list(_CASES), ids=list(_CASES))
def test_work_of_each_aten_op(case):
    """Each recognised aten op gives its one kernel the op table's class, shape, FLOP and bytes (op_table)."""
    (name, dims, types, concrete), expected = _CASES[case]
    doc, launched = _doc(_op(name, dims, types, concrete))
    trace = kineto_from_document(doc)
    got = _work(trace, _row(trace, launched[name][0]))
    assert _same(got, expected), got


@pytest.mark.parametrize(("spelling", "dtype"), [
    ("float", DType.FP32), ("double", DType.FP64), ("c10::Half", DType.FP16), ("c10::BFloat16", DType.BF16),
    ("c10::Float8_e4m3fn", DType.FP8), ("c10::Float8_e5m2", DType.FP8), ("c10::Float8_e4m3fnuz", DType.FP8),
    ("signed char", DType.INT8)])
def test_dtype_from_the_profilers_type_names(spelling, dtype):
    """The element type the profiler prints (c10's TypeMeta names) maps to a DType; bytes use its size."""
    doc, launched = _doc(_op("aten::relu", [[1000]], [spelling], [""]))
    trace = kineto_from_document(doc)
    row = _row(trace, launched["aten::relu"][0])
    assert DType(int(trace["dtype"][row])) == dtype
    assert trace["work_bytes"][row] == 2 * 1000 * dtype.bytes_per_element


def test_integer_tensors_have_no_dtype_code_but_their_bytes():
    """An int64 tensor (``long``) has no DType (none is defined) but 8 bytes per element."""
    doc, launched = _doc(_op("aten::neg", [[1000]], ["long"], None))
    trace = kineto_from_document(doc)
    row = _row(trace, launched["aten::neg"][0])
    assert trace["dtype"][row] == DType.UNKNOWN and trace["work_bytes"][row] == 16000


def test_unrecognised_and_unlaunched_kernels_stay_unknown():
    """A kernel of an op nodecast does not model (aten::cat) keeps the defaults; so does a kernel no op launched
    (an NCCL kernel's name would say its collective: ``test_collectives``)."""
    doc, launched = _doc(_op("aten::cat", [[[4, 1, 768], [4, 196, 768]], []], ["TensorList", "Scalar"], ["", "1"]),
                         _op("aten::relu", [[10]], ["float"], [""]))
    orphan = {"ph": "X", "cat": "kernel", "name": "orphan_kernel", "pid": 0, "tid": 7, "ts": 900_000,
              "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}
    doc["traceEvents"].append(orphan)
    trace = kineto_from_document(doc)
    for corr in (launched["aten::cat"][0], 1):
        assert _same(_work(trace, _row(trace, corr)), (OpClass.UNKNOWN, DType.UNKNOWN, NAN, NAN, -1, -1, -1, -1))
    assert trace["op_class"][_row(trace, launched["aten::relu"][0])] == OpClass.ELEMENTWISE


def test_without_record_shapes_the_class_still_comes_from_the_op_name():
    """A trace recorded without shapes (the V100 sample) still names the launching op: its class is kept; dtype,
    shape, FLOP and bytes are not recorded."""
    doc, launched = _doc(_op("aten::addmm"), _op("aten::native_layer_norm"))
    trace = kineto_from_document(doc)
    assert _same(_work(trace, _row(trace, launched["aten::addmm"][0])),
                 (OpClass.GEMM, DType.UNKNOWN, NAN, NAN, -1, -1, -1, -1))
    assert trace["op_class"][_row(trace, launched["aten::native_layer_norm"][0])] == OpClass.LAYERNORM


@pytest.mark.parametrize(("dims", "types"), [
    ("garbage", ["float"]),
    ([[-4, 3], [3, 5]], ["float", "float"]),
    ([[4, "3"], [3, 5]], ["float", "float"]),
    ([[4.5, 3], [3, 5]], ["float", "float"]),
    ([[4, 3], [7, 5]], ["float", "float"]),
    ([[2**62, 2**62], [2**62, 2]], ["float", "float"]),
    ([[4, 3], [3, 5]], "float"),
    ([[4, 3]], ["float", "float"]),
])
def test_odd_shapes_give_the_class_only(dims, types):
    """Shapes that are not lists of sizes, do not multiply (k differs) or overflow give no work and no error."""
    doc, launched = _doc(_op("aten::mm", dims, types, None))
    trace = kineto_from_document(doc)
    row = _row(trace, launched["aten::mm"][0])
    assert trace["op_class"][row] == OpClass.GEMM
    assert np.isnan(trace["flops"][row]) and np.isnan(trace["work_bytes"][row]) and trace["m"][row] == -1


def test_damaged_cpu_ops_are_skipped():
    """cpu_op events without times, with text times or with args that are not an object link nothing and raise
    nothing (they were never read before)."""
    doc, launched = _doc(_op("aten::relu", [[10]], ["float"], [""]), _op("aten::gelu", [[10]], ["float"], [""]))
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    ops[0]["ts"] = "soon"
    ops[1]["args"] = ["not", "an", "object"]
    doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": PID, "tid": PID})
    trace = kineto_from_document(doc)
    assert trace["op_class"][_row(trace, launched["aten::relu"][0])] == OpClass.UNKNOWN
    # An args that is not an object gives no External id: the op is still found by time, its class by name.
    assert trace["op_class"][_row(trace, launched["aten::gelu"][0])] == OpClass.ELEMENTWISE


# -- the real samples -----------------------------------------------------------------------------------------


def _events(path) -> list[dict]:  # noqa: ANN001
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    return [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]


def test_h100_sample_addmm_kernels(shared_traces):
    """The H100 ViT sample (PyTorch 2.6, record_shapes): every kernel an aten::addmm launched is a bf16 GEMM of
    the addmm's m, n, k with 2mnk FLOP; the flash-attention kernels are attention."""
    path = shared_traces / "kineto_nsfw-image-detection_h100.json.gz"
    evs = _events(path)
    ops = {e["args"]["External id"]: e for e in evs if e["cat"] == "cpu_op"}
    trace = read_kineto(path)
    seen = {"aten::addmm": 0, "aten::_flash_attention_forward": 0}
    for e in evs:
        if e["cat"] != "kernel":
            continue
        op = ops[e["args"]["External id"]]
        row = _row(trace, int(e["args"]["correlation"]))
        if op["name"] == "aten::addmm":
            (m, k), (_, n) = op["args"]["Input Dims"][1], op["args"]["Input Dims"][2]
            assert _same(_work(trace, row), (OpClass.GEMM, DType.BF16, 2.0 * m * n * k,
                                             2.0 * (m * k + k * n + m * n), 1, m, n, k))
            seen[op["name"]] += 1
        elif op["name"] == "aten::_flash_attention_forward":
            assert trace["op_class"][row] == OpClass.ATTENTION and trace["flops"][row] > 0
            seen[op["name"]] += 1
    assert seen == {"aten::addmm": 73, "aten::_flash_attention_forward": 12}


def test_a100_sample_mm_kernels_linked_by_time(shared_traces):
    """The A100 training sample (PyTorch 1.x: no External id links kernels to ops): the kernels each aten::mm
    launched itself (on its thread, in its span, in none of the ops it calls) are fp32 GEMMs, with 2mnk FLOP where
    the mm launched one kernel."""
    path = shared_traces / "kineto_training-rank0_a100-80gb.json.gz"
    evs = _events(path)
    launches = sorted((e["ts"], e["tid"], int(e["args"]["correlation"])) for e in evs if e["cat"] == "cuda_runtime")
    times = [t for t, _, _ in launches]
    kernels = {int(e["args"]["correlation"]) for e in evs if e["cat"] == "kernel"}
    trace = read_kineto(path)
    ops = [e for e in evs if e["cat"] == "cpu_op"]
    checked = 0
    for op in (e for e in ops if e["name"] == "aten::mm"):
        end = op["ts"] + op["dur"]
        inside = launches[bisect_right(times, op["ts"] - Decimal("0.001")):bisect_right(times, end)]
        # Not the launches of the ops it calls (aten::mm copies a transposed operand with aten::copy_ first).
        calls = [(c["ts"], c["ts"] + c["dur"]) for c in ops
                 if c is not op and c["tid"] == op["tid"] and op["ts"] <= c["ts"] and c["ts"] + c["dur"] <= end]
        mine = [c for ts, tid, c in inside
                if tid == op["tid"] and c in kernels and not any(lo <= ts <= hi for lo, hi in calls)]
        (m, k), (_, n) = op["args"]["Input Dims"]
        for corr in mine:
            flops = 2.0 * m * n * k if len(mine) == 1 else NAN
            got = _work(trace, _row(trace, corr))
            assert got[:2] == (OpClass.GEMM, DType.FP32) and _same(got[2:3], (flops,))
            checked += 1
    assert checked >= 15


def test_v100_sample_without_shapes_has_classes_only(shared_traces):
    """The V100 sample was recorded without shapes: kernels get op classes from their ops' names, nothing else."""
    trace = read_kineto(shared_traces / "kineto_training-rank0_v100.json.gz")
    kernels = trace["kind"] == OpKind.KERNEL
    assert np.count_nonzero(trace["op_class"][kernels]) > 0
    assert not np.any(trace["dtype"]) and np.all(np.isnan(trace["flops"])) and np.all(trace["m"] == -1)
