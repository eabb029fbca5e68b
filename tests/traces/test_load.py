"""load_trace: format detection for every real trace, samples, and every kind of bad input."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from nodecast.errors import InputError
from nodecast.traces.load import detect_format, list_samples, load_trace
from nodecast.traces.parquet import write_parquet

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
# Every timeline trace (the ncu-csv_* files are per-kernel metrics, read elsewhere).
ALL = sorted(p for pattern in ("nsys_*", "nvprof_*", "kineto_*", "nvprof-gputrace-csv_*") for p in TRACES.glob(pattern))
EXPECTED_FORMAT = {"nsys_": "nsys", "nvprof_": "nvprof", "kineto_": "kineto", "nvprof-gputrace-csv_": "nvprof-csv"}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_real_trace_loads(path):
    """Each real trace is detected from its content and loads with at least one GPU op."""
    prefix = next(p for p in EXPECTED_FORMAT if path.name.startswith(p))
    assert detect_format(path) == EXPECTED_FORMAT[prefix]
    trace = load_trace(path)
    assert len(trace) > 0
    assert trace.meta.source == str(path)


def test_all_groups_present(shared_traces):
    """The shared folder holds the four trace families this reader set covers."""
    assert {next(p for p in EXPECTED_FORMAT if f.name.startswith(p)) for f in ALL} == set(EXPECTED_FORMAT)


def test_samples_load_by_stem():
    """Every packaged sample loads as sample:<stem>, and the source says so."""
    stems = list_samples()
    assert "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x" in stems
    for stem in stems:
        trace = load_trace(f"sample:{stem}")
        assert trace.meta.source == f"sample:{stem}"
        assert len(trace) > 0


def test_unknown_sample_lists_available():
    """An unknown sample name is an InputError listing the samples there are."""
    with pytest.raises(InputError, match="Available samples: .*htod-pinned_titan-k20x"):
        load_trace("sample:nope")


def test_no_such_file(tmp_path):
    """A missing path is an InputError naming it."""
    with pytest.raises(InputError, match="no such file") as info:
        load_trace(tmp_path / "missing.sqlite")
    assert str(tmp_path / "missing.sqlite") in info.value.message


def test_folder_is_not_a_trace(tmp_path):
    """A folder is refused with a clear message."""
    with pytest.raises(InputError, match="a folder"):
        load_trace(tmp_path)


def test_not_a_trace_format(tmp_path):
    """A text file that is no known format is an InputError listing what nodecast reads."""
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(InputError, match="not a trace format nodecast reads.*nsys SQLite"):
        load_trace(path)


@pytest.mark.parametrize("name", ["trace", "trace.json", "trace.sqlite", "trace.nvvp", "trace.parquet", "trace.csv"])
def test_empty_file_says_empty(tmp_path, name):
    """A 0-byte file is reported as empty (usually an interrupted write), not as an unknown format."""
    path = tmp_path / name
    path.write_bytes(b"")
    with pytest.raises(InputError, match=r"the file is empty \(0 bytes\)") as info:
        load_trace(path)
    assert "not a trace format" not in info.value.message


def test_nsys_report_gets_export_hint(tmp_path):
    """An .nsys-rep file (not SQLite) gets the `nsys export` command as the hint."""
    path = tmp_path / "report1.nsys-rep"
    path.write_bytes(b"\x00\x01binary")
    with pytest.raises(InputError, match="nsys export --type sqlite report1.nsys-rep"):
        load_trace(path)


def test_ncu_csv_is_refused_with_reason(shared_traces):
    """An Nsight Compute metrics CSV is recognised and refused: it has no timeline."""
    path = next(shared_traces.glob("ncu-csv_*.csv"))
    with pytest.raises(InputError, match="Nsight Compute"):
        load_trace(path)


def test_sqlite_without_cupti_tables(tmp_path):
    """A SQLite file with other tables is refused, naming the tables that were expected."""
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE foo (x INTEGER)")
    con.close()
    with pytest.raises(InputError, match="not a profiler export.*StringIds.*StringTable"):
        load_trace(path)


def test_truncated_sqlite(shared_traces, tmp_path):
    """The first 4 KiB of a real export is reported as a corrupt or truncated database."""
    path = tmp_path / "cut.sqlite"
    path.write_bytes((shared_traces / "nsys_rodinia-gaussian-4096_rtx3090_baseline.sqlite").read_bytes()[:4096])
    with pytest.raises(InputError, match="corrupt or truncated"):
        load_trace(path)


def test_sqlite_truncated_mid_table(shared_traces, tmp_path):
    """An export cut after its schema pages fails while rows are read, still as an InputError."""
    data = (shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp").read_bytes()
    path = tmp_path / "half.nvvp"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="corrupt or truncated"):
        load_trace(path)


@pytest.mark.parametrize(
    ("name", "tables"),
    [
        ("nsys_sptrsv-levelset-ca_t4.sqlite", ("KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION")),
        ("nvprof_vectoradd-1M_t4.nvvp", ("CONCURRENT_KERNEL", "MEMCPY", "SYNCHRONIZATION")),
    ],
)
def test_export_with_rows_deleted_has_no_gpu_op(shared_traces, tmp_path, name, tables):
    """A real schema with its activity rows deleted is refused: the trace holds no GPU operation."""
    path = tmp_path / name
    shutil.copy(shared_traces / name, path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        for table in tables:
            con.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_{table}")
    con.close()
    with pytest.raises(InputError, match="no GPU operation"):
        load_trace(path)


def test_syncs_alone_are_no_gpu_work(shared_traces, tmp_path):
    """An export that keeps only synchronization rows is refused like an empty one."""
    path = tmp_path / "syncs.sqlite"
    shutil.copy(shared_traces / "nsys_vectoradd-streams_t4.sqlite", path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    con.close()
    with pytest.raises(InputError, match="no GPU operation"):
        load_trace(path)


def test_truncated_gzip(shared_traces, tmp_path):
    """A gzip file cut in half is an InputError about the truncated stream."""
    data = (shared_traces / "kineto_alexnet-benchmark_a100.json.gz").read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="gzip stream is truncated"):
        load_trace(path)


def test_truncated_json(shared_traces, tmp_path):
    """Plain JSON cut in the middle is an InputError giving the line and column."""
    text = gzip.decompress((shared_traces / "kineto_alexnet-benchmark_a100.json.gz").read_bytes())
    path = tmp_path / "cut.json"
    path.write_bytes(text[: len(text) // 2])
    with pytest.raises(InputError, match="invalid JSON at line"):
        load_trace(path)


def test_plain_json_loads(shared_traces, tmp_path):
    """An uncompressed Kineto file loads the same as the gzip one."""
    src = shared_traces / "kineto_alexnet-benchmark_a100.json.gz"
    path = tmp_path / "trace.json"
    path.write_bytes(gzip.decompress(src.read_bytes()))
    assert load_trace(path).counts() == load_trace(src).counts()


def test_kineto_without_gpu_events(tmp_path):
    """A Chrome trace with only CPU events is refused: no GPU operation."""
    path = tmp_path / "cpu.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}]}')
    with pytest.raises(InputError, match="no GPU operation"):
        load_trace(path)


def test_parquet_round_trip_through_load(tmp_path):
    """A Parquet file written by nodecast is detected and read back."""
    trace = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pageable_summit-v100")
    path = tmp_path / "t.parquet"
    write_parquet(trace, path)
    assert detect_format(path) == "parquet"
    assert load_trace(path).counts() == trace.counts()
