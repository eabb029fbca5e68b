"""Parquet writer/reader and CSV export: exact round trips, foreign and damaged files, atomic writes."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nodecast.errors import InputError
from nodecast.traces.load import load_trace
from nodecast.traces.parquet import read_arrow, read_parquet, to_csv, write_parquet
from nodecast.traces.trace import COLUMNS, MISSING_NS, OCCUPANCY_COLUMNS

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
SOME = [TRACES / n for n in ("nsys_sptrsv-levelset-la_t4.sqlite", "kineto_nsfw-image-detection_mi300x.json.gz",
                             "nvprof-gputrace-csv_vectoradd_k40c.csv", "nvprof_mxnet-cnn-inference_titan-v.nvvp")
        if (TRACES / n).exists()]
SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


@pytest.mark.parametrize("path", SOME, ids=lambda p: p.name)
def test_round_trip_is_exact(path, tmp_path):
    """Columns (values and dtypes), kernel names and metadata survive a Parquet round trip."""
    trace = load_trace(path)
    out = tmp_path / "t.parquet"
    write_parquet(trace, out)
    back = read_parquet(out)
    for name, dtype in COLUMNS.items():
        assert back[name].dtype == dtype
        np.testing.assert_array_equal(back[name], trace[name], err_msg=name)
    assert back.names == trace.names
    assert back.meta == trace.meta


def test_columns_stored_as_is(tmp_path):
    """The file holds the Trace columns with their integer types and nodecast metadata (a trace without
    collectives: format version 3, without the collective columns, as before they existed)."""
    import json

    from nodecast.traces.trace import COLLECTIVE_COLUMNS

    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    schema = pq.read_schema(out)
    assert schema.names == [c for c in COLUMNS if c not in COLLECTIVE_COLUMNS]
    assert json.loads(schema.metadata[b"nodecast"])["version"] == 3
    assert schema.field("start_ns").type == pa.int64()
    assert schema.field("kind").type == pa.int8()
    assert b"nodecast" in schema.metadata


def test_foreign_parquet_is_refused(tmp_path):
    """A Parquet file without nodecast's metadata is an InputError."""
    out = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), out)
    with pytest.raises(InputError, match="not written by nodecast"):
        read_parquet(out)


def test_foreign_arrow_is_refused_as_arrow(tmp_path):
    """An Arrow file without nodecast's metadata is named as an Arrow file (it read 'a Arrow file ... only the
    Parquet files')."""
    out = tmp_path / "other.arrow"
    with pa.ipc.new_file(out, pa.schema([("x", pa.int64())])) as writer:
        writer.write_table(pa.table({"x": [1, 2]}))
    with pytest.raises(InputError, match=r"an Arrow file not written by nodecast .* only the Arrow files") as info:
        read_arrow(out)
    assert "Parquet" not in str(info.value)


def test_truncated_parquet(tmp_path):
    """A cut Parquet file is an InputError, not a pyarrow traceback."""
    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cannot read the Parquet file"):
        read_parquet(out)


def test_write_into_missing_folder(tmp_path):
    """Writing into a folder that does not exist is an InputError and leaves nothing behind."""
    with pytest.raises(InputError, match="folder does not exist"):
        write_parquet(load_trace(SAMPLE), tmp_path / "nope" / "t.parquet")
    assert not (tmp_path / "nope").exists()


def test_failed_write_keeps_previous_file(tmp_path, monkeypatch):
    """A write that fails half-way leaves the previous file intact and no temporary file."""
    out = tmp_path / "t.parquet"
    out.write_bytes(b"previous")

    def boom(*args, **kwargs):  # noqa: ANN002, ANN003
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        write_parquet(load_trace(SAMPLE), out)
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def test_csv_has_labels(tmp_path):
    """CSV export spells kinds and memory kinds out and leaves absent API times empty."""
    trace = load_trace(SAMPLE)
    out = tmp_path / "t.csv"
    to_csv(trace, out)
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(trace)
    copies = [r for r in rows if r["kind"] == "memcpy"]
    assert {r["copy_kind"] for r in copies} == {"HTOD"}
    assert {r["src_mem"] for r in copies} == {"pinned"}
    missing = int(np.sum(trace["api_start_ns"] == MISSING_NS))
    assert sum(r["api_start_ns"] == "" for r in rows) == missing


def test_arrow_round_trip_is_exact(tmp_path):
    """A trace written as Arrow IPC reads back with identical columns, names and metadata."""
    from nodecast.traces.load import load_trace
    from nodecast.traces.parquet import write_arrow

    trace = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pageable_titan-k20x")
    path = tmp_path / "t.arrow"
    write_arrow(trace, path)
    back = load_trace(path)
    assert back.names == trace.names
    assert back.meta.gpus == trace.meta.gpus
    for name, column in trace.columns.items():
        assert back[name].dtype == column.dtype
        assert np.array_equal(back[name], column, equal_nan=column.dtype.kind == "f"), name  # NaN: flops unknown


def test_truncated_arrow_file_is_a_clear_error(tmp_path):
    """An Arrow file cut short is reported as such, not as a traceback."""
    import pytest

    from nodecast.errors import InputError
    from nodecast.traces.load import load_trace
    from nodecast.traces.parquet import write_arrow

    trace = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x")
    path = tmp_path / "t.arrow"
    write_arrow(trace, path)
    path.write_bytes(path.read_bytes()[: 4096])
    with pytest.raises(InputError, match="t.arrow"):
        load_trace(path)


def _edited(tmp_path: Path, name: str, values: pa.Array) -> Path:
    """A Parquet file written by nodecast with column ``name`` replaced by ``values`` (metadata kept)."""
    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    table = pq.read_table(out)
    i = table.schema.get_field_index(name)
    table = table.set_column(i, pa.field(name, values.type), values).replace_schema_metadata(table.schema.metadata)
    pq.write_table(table, out)
    return out


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("src_mem", lambda n: pa.array(["x"] * n), r"column 'src_mem' holds string values where int8 integers belong"),
        ("bytes", lambda n: pa.array([1.5] * n), r"column 'bytes' holds double values"),
        ("device", lambda n: pa.array([70000] * n, pa.int64()), r"column 'device' holds values out of range for int16"),
        ("start_ns", lambda n: pa.array([2**64 - 1] * n, pa.uint64()), r"column 'start_ns' holds values out of range"),
        ("kind", lambda n: pa.array([9] * n, pa.int8()), r"column 'kind' holds codes outside 0\.\.3 \(OpKind\)"),
        # A graph's host kinds (API, WAIT) share the vocabulary but are no Trace row.
        ("kind", lambda n: pa.array([4] * n, pa.int8()), r"column 'kind' holds codes outside 0\.\.3 \(OpKind\)"),
        ("end_ns", lambda n: pa.array([0] * n, pa.int64()), r"2,929 of 2,929 GPU ops end before they start"),
        ("bytes", lambda n: pa.array([-1] * n, pa.int64()), r"GPU ops have a negative byte count"),
    ],
    ids=["string", "double", "device-beyond-int16", "uint64-max", "kind-code", "graph-kind-code", "negative-duration",
         "negative-bytes"],
)
def test_edited_columns_are_refused(tmp_path, name, make, message):
    """A nodecast Parquet file with a column of the wrong type or impossible values is one InputError naming
    the column (a string column was a ValueError traceback; wide values wrapped silently)."""
    path = _edited(tmp_path, name, make(2929))
    with pytest.raises(InputError, match=message):
        load_trace(path)


def test_newer_format_version_is_refused(tmp_path):
    """A file written by a newer nodecast (another format version) is refused, not misread."""
    import json

    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    table = pq.read_table(out)
    doc = json.loads(table.schema.metadata[b"nodecast"])
    doc["version"] = 99
    pq.write_table(table.replace_schema_metadata({b"nodecast": json.dumps(doc).encode()}), out)
    with pytest.raises(InputError, match="format version 99; this nodecast reads versions 1, 2, 3 and 4"):
        read_parquet(out)


def test_occupancy_columns_round_trip(tmp_path, shared_traces):
    """Registers and shared memory per kernel survive a Parquet round trip exactly (format version 2)."""
    trace = load_trace(shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp")
    out = tmp_path / "t.parquet"
    write_parquet(trace, out)
    back = read_parquet(out)
    for col in OCCUPANCY_COLUMNS:
        np.testing.assert_array_equal(back[col], trace[col])
    assert (back["registers_per_thread"][back["kind"] == 0] > 0).all()


def test_version_1_file_reads_with_unrecorded_occupancy(tmp_path):
    """A file of format version 1 (no occupancy columns) still reads: those columns are -1, and a note says why."""
    import json

    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    table = pq.read_table(out)
    doc = json.loads(table.schema.metadata[b"nodecast"])
    doc["version"] = 1
    table = table.drop_columns(list(OCCUPANCY_COLUMNS))
    pq.write_table(table.replace_schema_metadata({b"nodecast": json.dumps(doc).encode()}), out)
    back = read_parquet(out)
    assert len(back) == table.num_rows
    for col in OCCUPANCY_COLUMNS:
        assert (back[col] == -1).all()
    assert any("format version 1" in n and "registers_per_thread" in n for n in back.meta.notes)


def test_version_2_file_reads_with_unrecorded_work_columns(tmp_path):
    """A file of format version 2 (before op classes and shapes) still reads: those columns are not recorded, one
    shared value each, and no note (no reader of version 2 recorded them)."""
    import json

    from nodecast.traces.trace import WORK_COLUMNS, is_constant

    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    table = pq.read_table(out)
    doc = json.loads(table.schema.metadata[b"nodecast"])
    doc["version"] = 2
    table = table.drop_columns([c for c in WORK_COLUMNS if c in table.column_names])
    pq.write_table(table.replace_schema_metadata({b"nodecast": json.dumps(doc).encode()}), out)
    back = read_parquet(out)
    assert (back["m"] == -1).all() and np.isnan(back["flops"]).all() and (back["op_class"] == 0).all()
    assert all(is_constant(back[c]) for c in WORK_COLUMNS)
    assert not any("format version" in n for n in back.meta.notes)


def test_version_2_file_without_occupancy_columns_is_refused(tmp_path):
    """A version-2 file lacking the occupancy columns is damaged: refused, naming them."""
    out = tmp_path / "t.parquet"
    write_parquet(load_trace(SAMPLE), out)
    table = pq.read_table(out)
    pq.write_table(table.drop_columns(["registers_per_thread"]), out)
    with pytest.raises(InputError, match="lacks trace columns \\['registers_per_thread'\\]"):
        read_parquet(out)
