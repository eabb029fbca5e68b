"""Op tables (``nodecast.traces.op_table``): per-op measurements read like a trace."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from nodecast.cli import main
from nodecast.errors import InputError
from nodecast.traces import op_table
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.load import detect_format, load_trace
from nodecast.traces.op_classes import DType, OpClass
from nodecast.traces.parquet import read_parquet, write_parquet
from nodecast.traces.trace import WORK_COLUMNS, is_constant

TABLE = """device,op,dtype,batch,m,n,k,name,duration_s,gpus,message_bytes,bytes
NVIDIA H100 80GB HBM3,gemm,bf16,,4096,4096,4096,,0.0011,,,
NVIDIA H100 80GB HBM3,bmm,float32,8,128,64,32,my_kernel,2e-5,,,
NVIDIA H100 80GB HBM3,copy,,,,,,,1e-6,,,1048576
NVIDIA H100 80GB HBM3,allreduce,half,,,,,,3e-5,8,1048576,
NVIDIA H100 80GB HBM3,softmax,fp16,,32,1000,,,4e-6,,,
"""


def _write(tmp_path, text: str, name: str = "ops.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _frame(**columns) -> pd.DataFrame:
    rows = len(next(iter(columns.values())))
    return pd.DataFrame({"device": ["Tesla T4"] * rows, **columns})


def test_rows_become_ops_back_to_back_on_one_stream(tmp_path):
    """Each row is one op starting where the previous ended: kernels, a DtoD copy, a collective with its group and
    message size; the timeline is the sum of the durations, and the notes say so."""
    trace = load_trace(_write(tmp_path, TABLE))
    assert trace.meta.format == "op-table" and trace.meta.gpus == {0: "NVIDIA H100 80GB HBM3"}
    assert trace["kind"].tolist() == [OpKind.KERNEL, OpKind.KERNEL, OpKind.MEMCPY, OpKind.KERNEL, OpKind.KERNEL]
    assert trace["start_ns"].tolist() == [0, 1_100_000, 1_120_000, 1_121_000, 1_151_000]
    assert trace["end_ns"][-1] == 1_155_000
    assert any("sum of their measured times (0.001155 s)" in n for n in trace.meta.notes)
    assert trace["op_class"].tolist() == [OpClass.GEMM, OpClass.BMM, OpClass.COPY, OpClass.ALL_REDUCE,
                                          OpClass.SOFTMAX]
    assert trace["dtype"].tolist() == [DType.BF16, DType.FP32, 0, DType.FP16, DType.FP16]
    copy = 2
    assert (trace["copy_kind"][copy], trace["src_mem"][copy], trace["dst_mem"][copy]) == \
        (CopyKind.DTOD, MemKind.DEVICE, MemKind.DEVICE)
    assert trace["bytes"].tolist() == [0, 0, 1048576, 1048576, 0]
    assert trace["gpus"].tolist() == [-1, -1, -1, 8, -1]
    assert trace["batch"].tolist() == [1, 8, -1, -1, 1]  # a shape without a batch has batch 1
    names = trace.kernel_names().tolist()
    assert names == ["gemm_bf16_m4096_n4096_k4096", "my_kernel", None, "all_reduce_fp16_g8_1048576B",
                     "softmax_fp16_m32_n1000"]


def test_work_from_shapes():
    """flops and least DRAM bytes per op class (module docstring's table); a given value wins; conv's bytes and a
    collective's work are not computed."""
    frame = op_table.check_frame(_frame(
        op=["gemm", "bmm", "linear", "elementwise", "softmax", "layernorm", "reduction", "attention", "conv",
            "copy", "all_gather", "gemm"],
        dtype=["bf16", "fp32", "fp32", "fp32", "fp16", "fp32", "fp32", "bf16", "fp32", "", "fp16", "fp8"],
        batch=[None, 4, 4, None, None, None, None, 16, None, None, None, None],
        m=[64, 8, 8, 10, 10, 10, 10, 128, 100, None, None, 2],
        n=[32, 16, 16, 20, 20, 20, 20, 256, 64, None, None, 2],
        k=[16, 2, 2, None, None, None, None, 64, 27, None, None, 2],
        bytes=[None, None, None, None, None, None, None, None, None, 1000, None, 7],
        flops=[None] * 11 + [5],
        duration_s=[1e-6] * 12))
    flops, traffic = op_table.work(frame)
    assert flops[:9].tolist() == [2 * 64 * 32 * 16, 2 * 4 * 8 * 16 * 2, 2 * 4 * 8 * 16 * 2, 200, 5 * 200, 8 * 200,
                                  200, 4 * 16 * 128 * 256 * 64, 2 * 100 * 64 * 27]
    assert traffic[:8].tolist() == [2 * (64 * 16 + 16 * 32 + 64 * 32), 4 * 4 * (8 * 2 + 2 * 16 + 8 * 16),
                                    4 * (4 * 8 * 2 + 2 * 16 + 4 * 8 * 16), 2 * 4 * 200, 2 * 2 * 200, 2 * 4 * 200,
                                    4 * (200 + 10), 2 * 16 * (2 * 128 * 64 + 2 * 256 * 64)]
    assert math.isnan(traffic[8])  # conv: give bytes
    assert (flops[9], traffic[9]) == (0.0, 2000.0)  # a copy reads and writes its bytes
    assert math.isnan(flops[10]) and math.isnan(traffic[10])
    assert (flops[11], traffic[11]) == (5.0, 7.0)  # given values win


@pytest.mark.parametrize(("text", "where", "words"), [
    ("device,op,latency_ms\nTesla T4,gemm,1\n", None, "no 'duration_s' column (its columns: device, op, latency_ms)"),
    ("device,op,duration_s\nTesla T4,gemm,-1e-6\n", "duration_s, row 1", "'-1e-6' is out of range (must be >= 0"),
    ("device,op,duration_s\nTesla T4,gemm,1e-6\nTesla T4,gemm,nan\n", "duration_s, row 2", "NaN"),
    ("device,op,duration_s\nTesla T4,gemm,\n", "duration_s, row 1", "is empty"),
    ("device,op,duration_s\nTesla T4,matmull,1e-6\n", "op, row 1", "unknown op 'matmull' (known: gemm, bmm"),
    ("device,op,dtype,duration_s\nTesla T4,gemm,fp7,1e-6\n", "dtype, row 1", "unknown dtype 'fp7'"),
    ("device,op,m,duration_s\nTesla T4,gemm,4096,1e-6\nTesla T4,gemm,big,1e-6\n", "m, row 2",
     "'big' is not an integer"),
    ("device,op,m,duration_s\nTesla T4,gemm,40.5,1e-6\n", "m, row 1", "not a whole number"),
    ("device,op,duration_s\n,gemm,1e-6\n", "device, row 1", "is empty"),
    ("device,op,duration_s\nTesla T4,copy,1e-6\n", "bytes, row 1", "a copy row has no bytes"),
    ("device,op,duration_s\nTesla T4,gemm,1e-6\nTesla V100,gemm,1e-6\n", "device",
     "measurements of 2 GPUs (Tesla T4: 1 rows, Tesla V100: 1 rows)"),
    ("device,op,duration_s\n", None, "the op table has no rows"),
    ("device,op,dtype,gpus,message_bytes,duration_s\nTesla T4,all_reduce,fp16,0,1024,1e-5\n", "gpus, row 1",
     "out of range (must be >= 1"),
    ("device,op,dtype,gpus,message_bytes,duration_s\nTesla T4,all_reduce,fp16,8,1024,1e-5\n"
     "Tesla T4,all_gather,bf16,8,1023,1e-5\n", "message_bytes, row 2",
     "1023 B is not a whole number of bf16 elements (2 B each)"),
])
def test_bad_tables_are_one_line_naming_file_column_and_row(tmp_path, capsys, text, where, words):
    """What a table gets wrong is an InputError naming the file, the column and row, and what to do; the CLI
    prints it on one line and exits with code 2."""
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_trace(path)
    message = err.value.message
    assert message.startswith(str(path)) and words in message, message
    if where:
        assert f": {where}: " in message, message
    assert err.value.hint
    assert main(["inspect", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and words in out.err


def test_device_picks_one_gpu_of_a_table_of_several(tmp_path):
    """``read_op_table(path, device=...)`` reads one GPU's rows of a table that holds several."""
    path = _write(tmp_path, "device,op,duration_s\nTesla T4,gemm,1e-6\nTesla V100,gemm,2e-6\nTesla T4,gemm,3e-6\n")
    trace = op_table.read_op_table(path, device="Tesla T4")
    assert trace.meta.gpus == {0: "Tesla T4"} and trace.duration_ns.tolist() == [1000, 3000]
    with pytest.raises(InputError, match="no row of GPU 'A100'"):
        op_table.read_op_table(path, device="A100")


def test_parquet_table_reads_as_the_csv(tmp_path):
    """An op table in Parquet is detected by its columns and reads as the same table in CSV."""
    csv = _write(tmp_path, TABLE)
    frame = op_table.read_frame(csv)
    parquet = tmp_path / "ops.parquet"
    frame.to_parquet(parquet)
    assert detect_format(csv) == "op-table" and detect_format(parquet) == "op-table"
    a, b = load_trace(csv), load_trace(parquet)
    assert a.names == b.names
    for name, column in a.columns.items():
        np.testing.assert_array_equal(b[name], column, err_msg=name)


def test_other_columns_are_named_in_the_notes(tmp_path):
    """A column the schema does not have is not read, and the notes say which."""
    trace = load_trace(_write(tmp_path, "device,op,duration_s,comment\nTesla T4,gemm,1e-6,warm\n"))
    assert any(n == "op-table columns not read: comment" for n in trace.meta.notes)


def test_detection_keeps_nodecast_parquet_and_nvprof_csv(tmp_path, shared_traces):
    """nodecast's own Parquet traces and nvprof GPU-trace CSVs are still detected as such."""
    nodecast = tmp_path / "t.parquet"
    write_parquet(load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"), nodecast)
    assert detect_format(nodecast) == "parquet"
    assert detect_format(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv") == "nvprof-csv"


def test_work_columns_survive_parquet_and_cost_nothing_when_not_recorded(tmp_path):
    """An op table's work columns round-trip through nodecast's Parquet; a profiler trace's hold one shared value
    (no memory per op), in the reader's Trace, after take and after a round trip."""
    trace = load_trace(_write(tmp_path, TABLE))
    out = tmp_path / "t.parquet"
    write_parquet(trace, out)
    back = read_parquet(out)
    for name in WORK_COLUMNS:
        np.testing.assert_array_equal(back[name], trace[name], err_msg=name)
    profiled = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x")
    assert all(is_constant(profiled[c]) for c in WORK_COLUMNS)
    assert all(is_constant(profiled.take(np.arange(0, len(profiled), 2))[c]) for c in WORK_COLUMNS)
    write_parquet(profiled, out)
    assert all(is_constant(read_parquet(out)[c]) for c in WORK_COLUMNS)
    with pytest.raises(ValueError, match="read-only"):
        profiled["m"][0] = 5


def test_damaged_work_values_in_a_parquet_trace_are_refused(tmp_path):
    """A negative flops value in nodecast's Parquet (an edited file) is an InputError naming the column."""
    import pyarrow.parquet as pq

    trace = load_trace(_write(tmp_path, TABLE))
    out = tmp_path / "t.parquet"
    write_parquet(trace, out)
    table = pq.read_table(out)
    flops = table.column("flops").to_numpy().copy()
    flops[1] = -1.0
    table = table.set_column(table.column_names.index("flops"), "flops", [flops])
    pq.write_table(table, out)
    with pytest.raises(InputError, match="negative or infinite value in 'flops'"):
        read_parquet(out)


def test_write_op_table_reads_back(tmp_path):
    """``write_op_table`` writes the schema's columns in order, checked, and they read back as written."""
    frame = op_table.check_frame(_frame(op=["bmm", "gemm"], dtype=["fp32", "fp32"], batch=[2, None],
                                        m=[3, 4], n=[5, 6], k=[7, 8], duration_s=[1e-5, 2e-5]))
    for suffix in (".csv", ".parquet"):
        path = op_table.write_op_table(frame, tmp_path / f"t{suffix}")
        back = op_table.read_frame(path)
        pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert (tmp_path / "t.csv").read_text().splitlines()[1] == "Tesla T4,bmm,fp32,2,3,5,7,,1e-05"
    with pytest.raises(InputError, match="unsupported op-table extension"):
        op_table.write_op_table(frame, tmp_path / "t.json")


# -- the shared corpora ------------------------------------------------------------------------------------------

def test_neusight_bmm_becomes_op_tables_per_gpu(shared_cross_gpu, tmp_path):
    """NeuSight's bmm file: one table per GPU, milliseconds made seconds, the kernel name and launch kept, and the
    T4 table reads as a trace of the T4."""
    raw = pd.read_parquet(shared_cross_gpu / "neusight-train" / "bmm.parquet")
    frame = op_table.from_neusight(shared_cross_gpu / "neusight-train" / "bmm.parquet")
    assert len(frame) == len(raw)
    first = frame.iloc[0]
    assert first["duration_s"] == pytest.approx(raw["Latency"].iloc[0] * 1e-3)
    assert (first["op"], first["dtype"], first["name"]) == ("bmm", "fp32", raw["Kernel Name"].iloc[0])
    assert [first[c] for c in ("batch", "m", "n", "k", "grid_x", "block_x")] == \
        [raw[c].iloc[0] for c in ("B", "M", "N", "K", "Grid x", "Block x")]
    t4 = frame[frame["device"] == "Tesla T4"].head(200)
    written = op_table.write_op_tables(t4, tmp_path)
    trace = load_trace(written["Tesla T4"])
    assert len(trace) == 200 and trace.meta.gpus == {0: "Tesla T4"}
    assert trace.duration_ns.sum() == pytest.approx(t4["duration_s"].sum() * 1e9, rel=1e-6)


def test_neusight_elementwise_and_conv_shapes(shared_cross_gpu):
    """(B, H) ops take m = B, n = H; binary elementwise ops read two tensors; conv becomes its implicit GEMM."""
    add = op_table.from_neusight(shared_cross_gpu / "neusight-train" / "add.parquet")
    raw = pd.read_parquet(shared_cross_gpu / "neusight-train" / "add.parquet")
    assert (add["m"] == raw["B"]).all() and (add["n"] == raw["H"]).all() and (add["op"] == "elementwise").all()
    assert (add["bytes"] == 12.0 * raw["B"] * raw["H"]).all()
    conv = op_table.from_neusight(shared_cross_gpu / "neusight-train" / "conv.parquet")
    raw = pd.read_parquet(shared_cross_gpu / "neusight-train" / "conv.parquet")
    p = (raw["Input_Size"] + 2 * raw["Padding"] - raw["Kernel_Szie"]) // raw["Stride"] + 1
    assert (conv["m"] == raw["B"] * p * p).all() and (conv["k"] == raw["Input_Channel"] * raw["Kernel_Szie"] ** 2).all()


def test_aiconfigurator_gemm_and_nccl(shared_cross_gpu):
    """AIConfigurator's GEMMs keep their dtype and m, n, k in seconds; NCCL message sizes become bytes."""
    gemm = op_table.from_aiconfigurator(shared_cross_gpu / "aiconfigurator" / "gemm.parquet")
    raw = pd.read_parquet(shared_cross_gpu / "aiconfigurator" / "gemm.parquet")
    assert len(gemm) == len(raw) and set(gemm["dtype"]) == {"bf16", "fp8", "fp8_block", "nvfp4", "int8", "int4"}
    h100 = raw[(raw["system"] == "h100_sxm") & (raw["gemm_dtype"] == "bfloat16")].iloc[0]
    row = gemm[(gemm["device"] == h100["device"]) & (gemm["dtype"] == "bf16") & (gemm["m"] == h100["m"])
               & (gemm["n"] == h100["n"]) & (gemm["k"] == h100["k"])]
    assert row["duration_s"].tolist() == [pytest.approx(h100["latency"] * 1e-3)]
    nccl = op_table.from_aiconfigurator(shared_cross_gpu / "aiconfigurator" / "nccl.parquet")
    raw = pd.read_parquet(shared_cross_gpu / "aiconfigurator" / "nccl.parquet")
    half = raw[raw["nccl_dtype"] == "half"].iloc[0]
    match = nccl[(nccl["device"] == half["device"]) & (nccl["dtype"] == "fp16") & (nccl["gpus"] == half["num_gpus"])
                 & (nccl["message_bytes"] == 2 * half["message_size"])]
    assert len(match) >= 1 and set(nccl["op"]) == {"all_gather", "all_reduce", "all_to_all", "reduce_scatter"}


def test_raw_corpus_file_says_how_to_convert_it(shared_cross_gpu):
    """Giving NeuSight's raw file (many GPUs, milliseconds) to a command says to convert it, on one line."""
    with pytest.raises(InputError) as err:
        load_trace(shared_cross_gpu / "neusight-train" / "softmax.parquet")
    assert "raw neusight measurement file" in err.value.message and "from_neusight" in err.value.message


def test_op_table_has_no_host_records(tmp_path):
    """The operation graph's host reader knows op tables: no API records, with a note saying so."""
    from nodecast.traces.load import load_api as read_api

    api = read_api(_write(tmp_path, TABLE))
    assert len(api) == 0 and any("an op table holds no host API records" in n for n in api.meta.notes)


def test_nccl_measurements_become_an_op_table_of_collectives(shared_cross_gpu, tmp_path):
    """NVIDIA's NCCL measurements on the A100 SXM node (AIConfigurator's nccl.parquet: message_size in elements,
    latency in ms) as an op table: each row a collective kernel with its op class, dtype, group, message size in
    bytes and duration; it survives nodecast's Parquet (format version 4: collectives)."""
    frame = op_table.from_aiconfigurator(shared_cross_gpu / "aiconfigurator" / "nccl.parquet")
    a100 = frame[frame["device"] == "NVIDIA A100-SXM4-80GB"]
    path = op_table.write_op_tables(a100, tmp_path)["NVIDIA A100-SXM4-80GB"]
    trace = load_trace(path)
    raw = pd.read_parquet(shared_cross_gpu / "aiconfigurator" / "nccl.parquet")
    raw = raw[raw["device"] == "NVIDIA A100-SXM4-80GB"]
    assert len(trace) == len(raw) == 504 and (trace["kind"] == OpKind.KERNEL).all()
    assert set(OpClass(c).key for c in np.unique(trace["op_class"])) == {"all_gather", "all_reduce", "all_to_all",
                                                                          "reduce_scatter"}
    assert set(np.unique(trace["gpus"]).tolist()) == {2, 4, 8}
    assert set(DType(d).key for d in np.unique(trace["dtype"])) == {"fp16", "int8"}
    fp16 = trace["dtype"] == DType.FP16
    assert trace["bytes"][fp16].min() == 2 * 256 and trace["bytes"][~fp16].max() == 536870912
    assert trace.duration_ns.sum() == pytest.approx(raw["latency"].sum() * 1e6, abs=len(raw))
    out = tmp_path / "nccl.parquet"
    assert main(["convert", str(path), "-o", str(out)]) == 0
    back = read_parquet(out)
    for column in ("op_class", "dtype", "bytes", "gpus", "algorithm", "protocol"):
        np.testing.assert_array_equal(back[column], trace[column], err_msg=column)
