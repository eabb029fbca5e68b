"""NCCL/RCCL collectives in traces: kernel names, the Kineto records they link to, the collective columns in files."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from nodecast.traces.collectives import parse_kernel_name
from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import Algorithm, DType, OpClass, Protocol
from nodecast.traces.trace import Trace, TraceMeta, is_constant

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
A100 = TRACES / "kineto_training-rank0_a100-80gb.json.gz"
U = Algorithm.UNKNOWN, Protocol.UNKNOWN

#: Name -> (collective, dtype, algorithm, protocol). The first is every NCCL kernel name of the shared traces
#: (kineto_training-rank0_a100-80gb: 80 launches; the other traces have none); then the issue's examples and one
#: name of each form NCCL and RCCL generate (the docstring of nodecast.traces.collectives gives the sources).
NAMES = {
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)":
        (OpClass.SEND_RECV, DType.UNKNOWN, *U),
    "ncclKernel_AllReduce_RING_LL_Sum_float": (OpClass.ALL_REDUCE, DType.FP32, Algorithm.RING, Protocol.UNKNOWN),
    "ncclKernel_AllReduce_TREE_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)":
        (OpClass.ALL_REDUCE, DType.FP16, Algorithm.TREE, Protocol.UNKNOWN),
    "ncclKernel_ReduceScatter_COLLNET_DIRECT_LL_Sum___nv_bfloat16":
        (OpClass.REDUCE_SCATTER, DType.BF16, Algorithm.COLLNET_DIRECT, Protocol.UNKNOWN),
    "ncclKernel_AllReduce_NVLS_TREE_LL_Sum_float": (OpClass.ALL_REDUCE, DType.FP32, Algorithm.NVLS_TREE,
                                                    Protocol.UNKNOWN),
    "ncclKernel_AllGather_NVLS_LL_Sum_int8_t": (OpClass.ALL_GATHER, DType.UNKNOWN, Algorithm.NVLS, Protocol.UNKNOWN),
    "ncclKernel_Broadcast_RING_LL_Sum_int8_t": (OpClass.BROADCAST, DType.UNKNOWN, Algorithm.RING, Protocol.UNKNOWN),
    "ncclKernel_Reduce_RING_LL_Sum_double": (OpClass.REDUCE, DType.FP64, Algorithm.RING, Protocol.UNKNOWN),
    "ncclKernel_AllReduce_RING_LL_Sum_int64_t": (OpClass.ALL_REDUCE, DType.UNKNOWN, Algorithm.RING, Protocol.UNKNOWN),
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)": (OpClass.ALL_GATHER, DType.UNKNOWN, *U),
    "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL": (OpClass.REDUCE_SCATTER, DType.BF16, *U),
    "ncclDevKernel_AllReduce_Sum_f32_TREE_LL(ncclDevKernelArgsStorage<4096ul>)":
        (OpClass.ALL_REDUCE, DType.FP32, Algorithm.TREE, Protocol.UNKNOWN),
    "ncclDevKernel_AllReduce_Sum_u8_RING_LL": (OpClass.ALL_REDUCE, DType.INT8, *U),
    "ncclDevKernel_Broadcast_RING_LL": (OpClass.BROADCAST, DType.UNKNOWN, *U),
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)": (OpClass.SEND_RECV, DType.UNKNOWN, *U),
    "ncclDevKernel_Generic": (OpClass.UNKNOWN, DType.UNKNOWN, *U),
    "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)": (OpClass.UNKNOWN, DType.UNKNOWN, *U),
    "ncclDevKernel_AllReduce_RING_LL128_Sum_bf16_Specialized":
        (OpClass.ALL_REDUCE, DType.BF16, Algorithm.RING, Protocol.LL128),
    "ncclDevKernel_AllReduce_TREE_SIMPLE_Sum_f32_acc1_Specialized":
        (OpClass.ALL_REDUCE, DType.FP32, Algorithm.TREE, Protocol.SIMPLE),
    "ncclDevKernel_AlltoAllPivot_RING_SIMPLE_Sum_i8_Specialized":
        (OpClass.ALL_TO_ALL, DType.UNKNOWN, Algorithm.RING, Protocol.SIMPLE),
    "ncclSymkDevKernel_AllReduce_AGxLL_R_sum_bf16": (OpClass.ALL_REDUCE, DType.BF16, *U),
    "ncclSymkDevKernel_AllGather_LL_profile": (OpClass.ALL_GATHER, DType.UNKNOWN, *U),
    "ncclAllReduceRingLLKernel_sum_f32(ncclColl)": (OpClass.ALL_REDUCE, DType.FP32, Algorithm.RING, Protocol.UNKNOWN),
    "ncclAllReduceTreeLLKernel_sum_f16": (OpClass.ALL_REDUCE, DType.FP16, Algorithm.TREE, Protocol.UNKNOWN),
    "ncclBroadcastRingLLKernel_copy_i8(ncclColl)": (OpClass.BROADCAST, DType.UNKNOWN, Algorithm.RING,
                                                    Protocol.UNKNOWN),
    "_Z38ncclKernel_AllReduce_RING_LL_Sum_floatP11ncclDevCommmP8ncclWork":
        (OpClass.ALL_REDUCE, DType.FP32, Algorithm.RING, Protocol.UNKNOWN),
    "void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)":
        (OpClass.ALL_GATHER, DType.UNKNOWN, Algorithm.RING, Protocol.UNKNOWN),
}


@pytest.mark.parametrize("name", list(NAMES))
def test_kernel_names(name):
    """Each name gives its collective, dtype, and the algorithm and protocol where the name says what ran."""
    got = parse_kernel_name(name)
    assert got is not None
    assert (got.op_class, got.dtype, got.algorithm, got.protocol) == NAMES[name]
    assert got.unknown == ()


@pytest.mark.parametrize("name", ["volta_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4>()",
                                  "ncclCommInitRank", "", "Memcpy HtoD (Pageable -> Device)"])
def test_other_names_are_no_nccl_kernel(name):
    assert parse_kernel_name(name) is None


@pytest.mark.parametrize(("name", "token"), [("ncclKernel_AllReduce_FOO_LL_Sum_float", "FOO"),
                                             ("ncclDevKernel_AllReduce_Sum_f32_RING_LL256", "LL256"),
                                             ("ncclKernel_AllToAllPlus_RING_LL_Sum_float", "AllToAllPlus"),
                                             ("ncclKernel_AllReduce_COLLNET_LL_Sum_float", "COLLNET")])
def test_unknown_tokens_are_named_not_refused(name, token):
    """An algorithm, protocol or collective the parser does not know reads as unknown and is named (for a note)."""
    got = parse_kernel_name(name)
    assert got is not None and token in got.unknown
    assert got.algorithm == Algorithm.UNKNOWN and got.protocol == Protocol.UNKNOWN


def _trace(names: list[str]) -> Trace:
    """One kernel per name, plus a memcpy, read through the readers' common builder."""
    from nodecast.traces import _common

    n = len(names) + 1
    cols = _common.allocate(n)
    cols["kind"][:] = [OpKind.KERNEL] * len(names) + [OpKind.MEMCPY]
    cols["start_ns"][:] = np.arange(n) * 10
    cols["end_ns"][:] = np.arange(n) * 10 + 5
    cols["name_id"][:] = [*range(len(names)), -1]
    return _common.finish(cols, names, TraceMeta(source="t", format="test"))


def test_every_reader_fills_the_columns_from_the_names():
    """The readers' common builder fills op_class, dtype, algorithm and protocol of NCCL kernels from their names."""
    trace = _trace(["ncclKernel_AllReduce_TREE_LL_Sum_half", "volta_sgemm_128x64_nn",
                    "ncclDevKernel_AllReduce_RING_LL128_Sum_bf16_Specialized"])
    assert trace["op_class"].tolist() == [OpClass.ALL_REDUCE, 0, OpClass.ALL_REDUCE, 0]
    assert trace["dtype"].tolist() == [DType.FP16, 0, DType.BF16, 0]
    assert trace["algorithm"].tolist() == [Algorithm.TREE, 0, Algorithm.RING, 0]
    assert trace["protocol"].tolist() == [0, 0, Protocol.LL128, 0]
    assert trace["gpus"].tolist() == [-1] * 4 and trace["bytes"].tolist() == [0] * 4


def test_traces_without_nccl_kernels_keep_shared_defaults():
    """No NCCL kernel: the work columns stay one shared value (no memory per op), and no note is added."""
    trace = _trace(["volta_sgemm_128x64_nn", "kernel2"])
    for column in ("op_class", "dtype", "algorithm", "protocol", "gpus"):
        assert is_constant(trace[column]), column
    assert trace.meta.notes == []


def test_unknown_and_generic_names_give_notes_not_errors():
    trace = _trace(["ncclKernel_AllReduce_FOO_LL_Sum_float", "ncclDevKernel_Generic"])
    assert trace["op_class"].tolist()[:2] == [OpClass.ALL_REDUCE, 0]
    assert trace["algorithm"].tolist()[:2] == [0, 0]
    notes = " ".join(trace.meta.notes)
    assert "ncclKernel_AllReduce_FOO_LL_Sum_float" in notes and "'FOO'" in notes
    assert "ncclDevKernel_Generic" in notes and "any collective" in notes


# --- the PyTorch profiler's records -------------------------------------------------------------------------------

@functools.cache
def _a100() -> Trace:
    from nodecast.traces.kineto import read_kineto

    return read_kineto(A100)


@pytest.mark.shared
def test_kineto_links_nccl_kernels_to_their_records(shared_traces):
    """The A100 training trace (PyTorch 1.x: the collective, tensor shape and type on nccl:* and c10d:: records,
    no group size): its 75 NCCL launches with a launch call get their record's collective, dtype, message size
    (nccl-tests' size) and group (all_gather/reduce_scatter: output/input = 8; others: the world size 16, with a
    note); the 5 without a launch call keep what the name says."""
    trace = _a100()
    nccl = np.flatnonzero(np.array([isinstance(n, str) and n.startswith("nccl") for n in trace.kernel_names()]))
    assert len(nccl) == 80
    op = trace["op_class"][nccl]
    counts = {OpClass(c).key: int(n) for c, n in zip(*np.unique(op, return_counts=True), strict=True)}
    assert counts == {"all_reduce": 10, "all_gather": 10, "reduce_scatter": 10, "all_to_all": 45, "send_recv": 5}
    linked = op != OpClass.SEND_RECV
    assert (trace["bytes"][nccl][~linked] == 0).all() and (trace["gpus"][nccl][~linked] == -1).all()
    nbytes, gpus, dtype = trace["bytes"][nccl], trace["gpus"][nccl], trace["dtype"][nccl]
    rs, ag, ar = op == OpClass.REDUCE_SCATTER, op == OpClass.ALL_GATHER, op == OpClass.ALL_REDUCE
    # reduce_scatter: its input [65536, 384] or [65536, 64] float; all_gather: its output [65536, 64] or [65536, 384]
    assert set(nbytes[rs].tolist()) == {65536 * 384 * 4, 65536 * 64 * 4}
    assert set(nbytes[ag].tolist()) == {65536 * 384 * 4, 65536 * 64 * 4}
    assert (gpus[rs | ag] == 8).all() and (gpus[ar] == 16).all() and (gpus[op == OpClass.ALL_TO_ALL] == 16).all()
    assert set(nbytes[ar].tolist()) == {366336 * 4, 447923396 * 4}
    assert (dtype[rs | ag | ar] == DType.FP32).all()
    # all_to_all of int and long tensors: no DType of theirs, but their bytes are known (4 and 8 B per element)
    a2a = op == OpClass.ALL_TO_ALL
    assert {48 * 8, 64 * 8, 360448 * 4, 32768 * 4, 3145728 * 4} <= set(nbytes[a2a].tolist())
    assert (nbytes[linked] > 0).all()
    assert (trace["algorithm"][nccl] == 0).all() and (trace["protocol"][nccl] == 0).all()
    notes = " ".join(trace.meta.notes)
    assert "world size 16" in notes and "generic kernel" in notes


@pytest.mark.shared
def test_kineto_records_without_nccl_kernels_change_nothing(shared_traces):
    """The V100 trace's collectives ran on one rank (world size 1): records, no NCCL kernel; nothing is filled."""
    from nodecast.traces.kineto import read_kineto

    trace = read_kineto(shared_traces / "kineto_training-rank0_v100.json.gz")
    assert not (trace["op_class"] >= OpClass.ALL_REDUCE).any()
    assert is_constant(trace["algorithm"]) and is_constant(trace["gpus"])


def _kineto(record_args: dict, kernel: str = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            world: int | None = None) -> Trace:
    """A PyTorch 2.x trace of one collective: record_param_comms > nccl:all_gather > the launch of one kernel."""
    from nodecast.traces.kineto import kineto_from_document

    events = [
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
         "args": {"External id": 7, **record_args}},
        {"ph": "X", "cat": "user_annotation", "name": "nccl:all_gather", "pid": 1, "tid": 1, "ts": 101, "dur": 40,
         "args": {"External id": 8}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 5,
         "args": {"correlation": 5, "External id": 8}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": 200, "dur": 30,
         "args": {"correlation": 5, "External id": 7, "device": 0, "stream": 7}},
    ]
    doc = {"traceEvents": events, **({"distributedInfo": {"world_size": world}} if world else {})}
    return kineto_from_document(doc, source="t.json")


GATHER = {"Collective name": "_allgather_base", "dtype": "BFloat16", "In msg nelems": 1024, "Out msg nelems": 8192,
          "Group size": 8}


def test_kineto_record_of_pytorch_2():
    """record_param_comms (PyTorch 2.x): all_gather's message is its output (nccl-tests' size), bf16, 8 GPUs."""
    trace = _kineto(GATHER)
    assert trace["op_class"].tolist() == [OpClass.ALL_GATHER]
    assert trace["dtype"].tolist() == [DType.BF16]
    assert trace["bytes"].tolist() == [8192 * 2] and trace["gpus"].tolist() == [8]


@pytest.mark.parametrize(("change", "gpus", "nbytes", "note"), [
    ({"Group size": 0}, 8, 8192 * 2, "group size 0"),  # inferred from output / input instead
    ({"Group size": -1, "Out msg nelems": 8000}, -1, 8000 * 2, "group size -1"),  # 8000 / 1024 is no whole number
    ({"Group size": "eight"}, 8, 8192 * 2, "group size 'eight'"),
    ({"dtype": "Fancy8"}, 8, 0, "Fancy8"),  # no element size known: no message size
    ({"In msg nelems": -3}, 8, 8192 * 2, "-3"),
    ({"Out msg nelems": 1 << 60}, 8, 0, "2^50"),  # more than any op moves: not taken
])
def test_kineto_bad_record_values_give_notes(change, gpus, nbytes, note):
    """A group size that is not positive, a dtype of unknown size, a count that is no count: a note saying what was
    assumed, and the trace loads."""
    trace = _kineto({**GATHER, **change})
    assert trace["op_class"].tolist() == [OpClass.ALL_GATHER]
    assert trace["gpus"].tolist() == [gpus] and trace["bytes"].tolist() == [nbytes]
    assert any(note in n for n in trace.meta.notes), trace.meta.notes


def test_kineto_world_size_stands_in_for_an_unrecorded_group():
    trace = _kineto({"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 10, "Out msg nelems": 10},
                    kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL", world=4)
    assert trace["gpus"].tolist() == [4] and trace["bytes"].tolist() == [40]
    assert trace["op_class"].tolist() == [OpClass.ALL_REDUCE]
    assert any("world size 4" in n for n in trace.meta.notes)


def test_kineto_record_collective_wins_over_the_kernel_name():
    """A kernel named for one collective that a record says ran another (NCCL's generic kernel): the record's
    collective and dtype, not the name's algorithm."""
    trace = _kineto({"Collective name": "reduce_scatter_tensor", "dtype": "Half", "In msg nelems": 64,
                     "Out msg nelems": 8, "Group size": 8}, kernel="ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t")
    assert trace["op_class"].tolist() == [OpClass.REDUCE_SCATTER]
    assert trace["bytes"].tolist() == [64 * 2] and trace["dtype"].tolist() == [DType.FP16]
    assert trace["algorithm"].tolist() == [0]


# --- the collective columns in files ------------------------------------------------------------------------------

def test_parquet_keeps_collectives_as_version_4_and_reads_version_3_by_the_names(tmp_path):
    """A trace with collectives round-trips exactly as format version 4 (no note said twice); a version-3 file of
    the same trace, as nodecast wrote it before (no collective columns, nothing read from names), reads with what
    the kernel names say."""
    import json

    import pyarrow.parquet as pq

    from nodecast.traces.parquet import read_arrow, read_parquet, write_arrow, write_parquet
    from nodecast.traces.trace import COLLECTIVE_COLUMNS, COLUMNS

    trace = _trace(["ncclKernel_AllReduce_TREE_LL_Sum_half", "ncclDevKernel_Generic", "volta_sgemm_128x64_nn"])
    out = tmp_path / "t.parquet"
    write_parquet(trace, out)
    assert json.loads(pq.read_schema(out).metadata[b"nodecast"])["version"] == 4
    for back in (read_parquet(out), (write_arrow(trace, tmp_path / "t.arrow"), read_arrow(tmp_path / "t.arrow"))[1]):
        for column in COLUMNS:
            np.testing.assert_array_equal(back[column], trace[column], err_msg=column)
        assert back.meta.notes == trace.meta.notes
    table = pq.read_table(out).drop_columns(list(COLLECTIVE_COLUMNS))
    doc = json.loads(table.schema.metadata[b"nodecast"])
    doc["version"], doc["meta"]["notes"] = 3, []
    zero = np.zeros(len(trace), np.int8)
    table = table.set_column(table.column_names.index("op_class"), "op_class", [zero])
    table = table.set_column(table.column_names.index("dtype"), "dtype", [zero])
    pq.write_table(table.replace_schema_metadata({b"nodecast": json.dumps(doc).encode()}), out)
    old = read_parquet(out)
    for column in ("op_class", "dtype", "algorithm", "protocol"):
        np.testing.assert_array_equal(old[column], trace[column], err_msg=column)
    assert any("generic kernel" in n for n in old.meta.notes)


def test_csv_labels_the_collective_columns_only_for_traces_with_collectives(tmp_path):
    from nodecast.traces.parquet import to_csv

    to_csv(_trace(["ncclKernel_AllReduce_TREE_LL_Sum_half"]), tmp_path / "c.csv")
    header, first = (tmp_path / "c.csv").read_text().splitlines()[:2]
    assert ",gpus,algorithm,protocol,transfer_class,name" in header
    assert ",all_reduce,fp16," in first and ",tree,unknown,not_a_transfer," in first
    to_csv(_trace(["volta_sgemm_128x64_nn"]), tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().splitlines()[0].endswith(",k,gpus,transfer_class,name")


@pytest.mark.shared
def test_nvprof_csv_reader_reads_nccl_kernel_names(shared_traces, tmp_path):
    """A reader other than Kineto (nvprof's CSV, its kernels renamed as NCCL would name them): the NCCL kernels get
    their collective, dtype and algorithm; the rest of the trace reads as before."""
    from nodecast.traces.load import load_trace

    source = shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv"
    text = source.read_text().replace("VecAdd(float*, float*, int)",
                                      "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)")
    (tmp_path / "nccl.csv").write_text(text)
    before, after = load_trace(source), load_trace(tmp_path / "nccl.csv")
    kernels = after["kind"] == OpKind.KERNEL
    assert kernels.any()
    assert (after["op_class"][kernels] == OpClass.ALL_REDUCE).all() and (after["dtype"][kernels] == DType.FP32).all()
    assert (after["algorithm"][kernels] == Algorithm.RING).all() and (after["op_class"][~kernels] == 0).all()
    for column in ("start_ns", "end_ns", "bytes", "kind", "stream"):
        np.testing.assert_array_equal(after[column], before[column], err_msg=column)
