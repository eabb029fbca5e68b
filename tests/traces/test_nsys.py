"""Nsight Systems SQLite reader: every real export against direct SQL counts, enums, API times."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.traces import _sqlite
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.nsys import read_nsys
from nodecast.traces.trace import MISSING_NS

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
NSYS = sorted(TRACES.glob("nsys_*.sqlite"))

# The test's own reading of ENUM_CUDA_MEMCPY_OPER names (CUDA_MEMCPY_KIND_<X>).
EXPECTED_COPY = {
    "HTOD": CopyKind.HTOD, "DTOH": CopyKind.DTOH, "DTOD": CopyKind.DTOD, "HTOH": CopyKind.HTOH,
    "PTOP": CopyKind.PEER, "HTOA": CopyKind.HTOD, "ATOH": CopyKind.DTOH, "ATOA": CopyKind.DTOD,
    "ATOD": CopyKind.DTOD, "DTOA": CopyKind.DTOD, "UVM_HTOD": CopyKind.UVM_HTOD,
    "UVM_DTOH": CopyKind.UVM_DTOH, "UVM_DTOD": CopyKind.UVM_DTOD, "UNKNOWN": CopyKind.UNKNOWN,
}
DOCUMENTED_COPY_NAMES = ["UNKNOWN", "HTOD", "DTOH", "HTOA", "ATOH", "ATOA", "ATOD", "DTOA", "DTOD", "HTOH", "PTOP",
                         "UVM_HTOD", "UVM_DTOH", "UVM_DTOD"]


def sql(path: Path, query: str) -> list[tuple]:
    """Run a query on a read-only connection (the test's independent view of the file)."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def tables(path: Path) -> set[str]:
    """Table names of a SQLite file."""
    return {r[0] for r in sql(path, "SELECT name FROM sqlite_master WHERE type='table'")}


def count(path: Path, table: str) -> int:
    """Rows of a table, 0 when it is absent."""
    return sql(path, f"SELECT count(*) FROM {table}")[0][0] if table in tables(path) else 0


def copy_names(path: Path) -> dict[int, str]:
    """copyKind number -> name, from the file's ENUM table or the documented numbering."""
    if "ENUM_CUDA_MEMCPY_OPER" in tables(path):
        return {i: n.removeprefix("CUDA_MEMCPY_KIND_") for i, n in sql(path, "SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER")}
    return dict(enumerate(DOCUMENTED_COPY_NAMES))


@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_counts_match_sql(path):
    """Kernels, memsets, syncs and copies per direction (count and bytes) equal direct SQL counts."""
    trace = read_nsys(path)
    kind = trace["kind"]
    assert np.sum(kind == OpKind.KERNEL) == count(path, "CUPTI_ACTIVITY_KIND_KERNEL")
    assert np.sum(kind == OpKind.MEMSET) == count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
    assert np.sum(kind == OpKind.SYNC) == count(path, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    expected: dict[CopyKind, list[int]] = {}
    names = copy_names(path)
    for raw, n, total in sql(path, "SELECT copyKind, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"):
        ck = EXPECTED_COPY[names[raw]]
        expected.setdefault(ck, [0, 0])
        expected[ck][0] += n
        expected[ck][1] += total
    copies = kind == OpKind.MEMCPY
    got = {CopyKind(k): [int(np.sum(copies & (trace["copy_kind"] == k))),
                         int(trace["bytes"][copies & (trace["copy_kind"] == k)].sum())]
           for k in np.unique(trace["copy_kind"][copies])}
    assert got == expected


@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_api_times_where_sql_join_finds_them(path):
    """Every op whose correlationId has a RUNTIME record gets that record's CPU start/end, and only those."""
    matched = 0
    for table in ("KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION"):
        if f"CUPTI_ACTIVITY_KIND_{table}" in tables(path):
            matched += sql(path, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_{table} a JOIN CUPTI_ACTIVITY_KIND_RUNTIME r"
                                 f" ON r.correlationId = a.correlationId WHERE a.correlationId > 0")[0][0]
    trace = read_nsys(path)
    has_api = trace["api_start_ns"] != MISSING_NS
    assert has_api.sum() == matched > 0
    assert np.all(trace["api_end_ns"][has_api] >= trace["api_start_ns"][has_api])
    kernels = trace["kind"] == OpKind.KERNEL
    runtime = dict(sql(path, "SELECT correlationId, start FROM CUPTI_ACTIVITY_KIND_RUNTIME"))
    first = np.flatnonzero(kernels)[0]
    assert trace["api_start_ns"][first] == runtime[int(trace["correlation"][first])]


@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_kernel_names_and_gpus(path):
    """Kernels are named from StringIds (demangled first) and every op's device has a GPU name."""
    trace = read_nsys(path)
    kernels = trace["kind"] == OpKind.KERNEL
    assert np.all(trace["name_id"][kernels] >= 0)
    assert np.all(trace["name_id"][~kernels] == -1)
    expected = {v for (v,) in sql(path, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s"
                                        " ON s.id = coalesce(k.demangledName, k.shortName)")}
    assert set(trace.kernel_names()[kernels]) == expected
    assert set(np.unique(trace["device"]).tolist()) <= set(trace.meta.gpus)
    assert trace.meta.profiler.replace("NVIDIA ", "").startswith("Nsight Systems")


@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_rows_in_gpu_order(path):
    """Rows are sorted by device then GPU start time, and no op ends before it starts."""
    trace = read_nsys(path)
    dev, start = trace["device"], trace["start_ns"]
    assert np.all((dev[1:] > dev[:-1]) | ((dev[1:] == dev[:-1]) & (start[1:] >= start[:-1])))
    assert np.all(trace["end_ns"] >= trace["start_ns"])


def test_unified_memory_kinds(shared_traces):
    """Softmax on managed memory: UVM_HTOD/UVM_DTOH migrations with MANAGED memory on both sides."""
    path = shared_traces / "nsys_softmax-unified-memory_t4.sqlite"
    trace = read_nsys(path)
    copies = trace["kind"] == OpKind.MEMCPY
    expected = dict(sql(path, "SELECT copyKind, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"))
    assert np.sum(trace["copy_kind"] == CopyKind.UVM_HTOD) == expected[11]
    assert np.sum(trace["copy_kind"] == CopyKind.UVM_DTOH) == expected[12]
    assert np.all(trace["src_mem"][copies] == MemKind.MANAGED)
    assert np.all(trace["dst_mem"][copies] == MemKind.MANAGED)
    # Page migrations have no API call (correlationId 0): their API times stay missing.
    assert np.all(trace["api_start_ns"][copies] == MISSING_NS)


def test_memory_kinds_use_the_shifted_nsys_numbering(shared_traces):
    """nsys srcKind 0 is PAGEABLE and 2 DEVICE (CUPTI would say UNKNOWN and PINNED)."""
    path = shared_traces / "nsys_omp-offload-heat-8000_t4_map-every-step.sqlite"
    trace = read_nsys(path)
    htod = trace["copy_kind"] == CopyKind.HTOD
    assert sql(path, "SELECT DISTINCT srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1") == [(0, 2)]
    assert np.all(trace["src_mem"][htod] == MemKind.PAGEABLE)
    assert np.all(trace["dst_mem"][htod] == MemKind.DEVICE)


def test_old_export_without_enum_tables_uses_documented_numbering(shared_traces):
    """The OpenACC export has no ENUM tables: srcKind 1 decodes as PINNED, and a note says so."""
    path = shared_traces / "nsys_openacc-kmeans_rtx3080.sqlite"
    assert "ENUM_CUDA_MEM_KIND" not in tables(path)
    trace = read_nsys(path)
    htod = trace["copy_kind"] == CopyKind.HTOD
    assert np.all(trace["src_mem"][htod] == MemKind.PINNED)
    assert any("ENUM_CUDA_MEM_KIND" in n for n in trace.meta.notes)
    assert trace.meta.gpus == {0: "NVIDIA GeForce RTX 3080"}


def test_enum_table_wins_over_documented_numbering(shared_traces, tmp_path):
    """When the file's ENUM_CUDA_MEM_KIND says 1 means PAGEABLE, the reader believes the file."""
    path = tmp_path / "swapped.sqlite"
    shutil.copy(shared_traces / "nsys_vectoradd-streams_t4.sqlite", path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE ENUM_CUDA_MEM_KIND SET id = id + 100 WHERE id IN (0, 1)")
        con.execute("UPDATE ENUM_CUDA_MEM_KIND SET id = 1 WHERE id = 100")  # 1 is now PAGEABLE
        con.execute("UPDATE ENUM_CUDA_MEM_KIND SET id = 0 WHERE id = 101")
    trace = read_nsys(path)
    assert np.all(trace["src_mem"][trace["copy_kind"] == CopyKind.HTOD] == MemKind.PAGEABLE)


def test_array_and_peer_copies(shared_traces, tmp_path):
    """HtoA folds into HTOD with ARRAY on the destination; PtoP becomes PEER with both devices."""
    path = tmp_path / "copies.sqlite"
    shutil.copy(shared_traces / "nsys_vectoradd-streams_t4.sqlite", path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY")
        cols = "start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind"
        con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY ({cols}) VALUES (10, 20, 0, 1, 7, -5, 1, 64, 3, 1, 3)")
        con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY ({cols}, srcDeviceId, dstDeviceId)"
                    " VALUES (30, 40, 0, 1, 7, -6, 1, 128, 10, 2, 2, 0, 1)")
    trace = read_nsys(path)
    copies = np.flatnonzero(trace["kind"] == OpKind.MEMCPY)
    htoa, ptop = copies[trace["bytes"][copies] == 64][0], copies[trace["bytes"][copies] == 128][0]
    assert (trace["copy_kind"][htoa], trace["src_mem"][htoa], trace["dst_mem"][htoa]) == (
        CopyKind.HTOD, MemKind.PINNED, MemKind.ARRAY)
    assert (trace["copy_kind"][ptop], trace["src_device"][ptop], trace["dst_device"][ptop]) == (CopyKind.PEER, 0, 1)
    assert trace["src_device"][htoa] == trace["dst_device"][htoa] == 0


def test_multi_gpu_names(shared_traces):
    """The Rodinia machine lists 7 RTX 3090s by CUDA device id."""
    trace = read_nsys(shared_traces / "nsys_rodinia-gaussian-4096_rtx3090_baseline.sqlite")
    assert trace.meta.gpus == dict.fromkeys(range(7), "NVIDIA GeForce RTX 3090")


def test_sync_without_stream_gets_minus_one(shared_traces):
    """Context synchronizations (streamId 0xFFFFFFFF in the file) have stream -1."""
    path = shared_traces / "nsys_rodinia-gaussian-4096_rtx3090_baseline.sqlite"
    trace = read_nsys(path)
    syncs = trace["kind"] == OpKind.SYNC
    assert sql(path, "SELECT DISTINCT streamId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") == [(0xFFFFFFFF,)]
    assert np.all(trace["stream"][syncs] == -1)


def test_adbc_and_sqlite3_paths_agree(shared_traces, monkeypatch):
    """The ADBC bulk path and the sqlite3 fallback give identical columns."""
    path = shared_traces / "nsys_sptrsv-levelset-la_t4.sqlite"
    fast = read_nsys(path)
    monkeypatch.setattr(_sqlite, "USE_ADBC", False)
    slow = read_nsys(path)
    assert fast.names == slow.names
    for name, column in fast.columns.items():
        np.testing.assert_array_equal(column, slow[name], err_msg=name)


def test_reading_leaves_no_files_beside_the_input(shared_traces, tmp_path):
    """Opening read-only and immutable creates no journal, WAL or lock file next to the input."""
    path = tmp_path / "copy.sqlite"
    shutil.copy(shared_traces / "nsys_tomo-recon-stream_a100.sqlite", path)
    before = sorted(tmp_path.iterdir())
    read_nsys(path)
    assert sorted(tmp_path.iterdir()) == before


# -- bad values: one InputError naming table and column -------------------------------------------------------

_KERNEL_COLS = "start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, " \
               "demangledName INTEGER, shortName INTEGER"
_MEMCPY_COLS = "start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, " \
               "bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER"


def small_export(path: Path, kernels: list[tuple], copies: list[tuple], memcpy_cols: str = _MEMCPY_COLS) -> Path:
    """A minimal nsys export: StringIds, KERNEL and MEMCPY tables with the given rows."""
    con = sqlite3.connect(path)
    with con:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        con.execute("INSERT INTO StringIds VALUES (1, 'k(int)')")
        con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({_KERNEL_COLS})")
        con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY ({memcpy_cols})")
        con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?)", kernels)
        marks = ", ".join("?" * len(memcpy_cols.split(",")))
        con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ({marks})", copies)
    con.close()
    return path


GOOD_KERNELS = [(100, 200, 0, 7, 1, 1, 1), (300, 400, 0, 7, 2, 1, 1)]
GOOD_COPIES = [(10, 50, 0, 7, 3, 4096, 1, 0, 2), (60, 90, 0, 7, 4, 4096, 2, 2, 0)]


@pytest.fixture(params=[True, False], ids=["adbc", "sqlite3"])
def both_paths(request, monkeypatch):
    """Run a test through the ADBC bulk path and the sqlite3 fallback."""
    monkeypatch.setattr(_sqlite, "USE_ADBC", request.param)


def test_small_export_loads(tmp_path, both_paths):
    """The hand-made export the bad-value tests start from is read as 2 kernels and 2 copies."""
    trace = read_nsys(small_export(tmp_path / "ok.sqlite", GOOD_KERNELS, GOOD_COPIES))
    assert trace.counts() == {"kernel": 2, "memcpy": 2}
    assert trace["bytes"][trace["kind"] == OpKind.MEMCPY].tolist() == [4096, 4096]


def test_negative_durations_are_refused(tmp_path, both_paths):
    """Copies that end before they start are an error counting them (inspect showed 'transfer time -600 us')."""
    copies = [(10, 50, 0, 7, 3, 4096, 1, 0, 2), (600, 0, 0, 7, 4, 4096, 2, 2, 0)]
    path = small_export(tmp_path / "neg.sqlite", GOOD_KERNELS, copies)
    with pytest.raises(InputError, match=r"neg\.sqlite: 1 of 4 GPU ops end before they start \(1 memcpy; first: "
                                         r"memcpy starting at 600 ns, duration -600 ns\)"):
        read_nsys(path)


def test_negative_bytes_are_refused(tmp_path, both_paths):
    """A copy of a negative number of bytes is an error."""
    copies = [(10, 50, 0, 7, 3, -4096, 1, 0, 2), *GOOD_COPIES[1:]]
    with pytest.raises(InputError, match=r"1 of 4 GPU ops have a negative byte count \(1 memcpy"):
        read_nsys(small_export(tmp_path / "neg.sqlite", GOOD_KERNELS, copies))


def test_missing_bytes_column_is_refused(tmp_path, both_paths):
    """A MEMCPY table without its bytes column names table and column (every copy read as 0 B)."""
    cols = _MEMCPY_COLS.replace("bytes INTEGER, ", "")
    copies = [row[:5] + row[6:] for row in GOOD_COPIES]
    path = small_export(tmp_path / "drop.sqlite", GOOD_KERNELS, copies, memcpy_cols=cols)
    with pytest.raises(InputError, match=r"drop\.sqlite: CUPTI_ACTIVITY_KIND_MEMCPY: the table has no bytes column"):
        read_nsys(path)


@pytest.mark.parametrize(("table", "row", "column"), [
    ("KERNEL", (100, "y", 0, 7, 1, 1, 1), "CUPTI_ACTIVITY_KIND_KERNEL.end"),
    ("MEMCPY", (10, 50, 0, 7, 3, "abc", 1, 0, 2), "CUPTI_ACTIVITY_KIND_MEMCPY.bytes"),
])
def test_text_in_a_numeric_column_names_it(tmp_path, both_paths, table, row, column):
    """Text where a number belongs names the column (it said the table 'changed while it was read')."""
    kernels = [row, *GOOD_KERNELS] if table == "KERNEL" else GOOD_KERNELS
    copies = [row, *GOOD_COPIES] if table == "MEMCPY" else GOOD_COPIES
    with pytest.raises(InputError, match=rf"{column}: 1 rows hold text where a number belongs") as info:
        read_nsys(small_export(tmp_path / "text.sqlite", kernels, copies))
    assert "changed while it was read" not in info.value.message


def test_device_id_beyond_int16_is_refused(tmp_path, both_paths):
    """A deviceId that does not fit the int16 column is an error, not a silently wrapped device."""
    kernels = [(100, 200, 70000, 7, 1, 1, 1)]
    with pytest.raises(InputError, match=r"CUPTI_ACTIVITY_KIND_KERNEL\.deviceId: value 70000 is out of range"):
        read_nsys(small_export(tmp_path / "dev.sqlite", kernels, GOOD_COPIES))


# -- damaged metadata tables: seeded mutants of real exports (issue 10, item 9) ---------------------------------

def mutant(shared: Path, name: str, tmp_path: Path, table: str, statement: str) -> Path:
    """A copy of the real export ``name`` with one cell of ``table`` changed by ``statement``.

    The table is first rebuilt without its constraints (``CREATE TABLE ... AS SELECT``, same rows and column
    affinities), as a hand edit or another tool may leave it, so that NULL and text can be stored where nsys
    declares ``INTEGER NOT NULL PRIMARY KEY``.
    """
    path = tmp_path / f"mutant-{name}"
    shutil.copy(shared / name, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    with con:
        con.execute(f'ALTER TABLE "{table}" RENAME TO _original')
        con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM _original')
        con.execute("DROP TABLE _original")
        assert con.execute(statement).rowcount == 1
    con.close()
    return path


SOFTMAX = "nsys_softmax-unified-memory_t4.sqlite"  # ENUM tables, TARGET_INFO_GPU(id, cuDevice), _CUDA_DEVICE
KMEANS = "nsys_openacc-kmeans_rtx3080.sqlite"  # older schema: TARGET_INFO_GPU(deviceId), TARGET_INFO_CUDA_GPU


@pytest.mark.parametrize(("name", "table", "statement", "message"), [
    (SOFTMAX, "ENUM_CUDA_MEMCPY_OPER", "UPDATE ENUM_CUDA_MEMCPY_OPER SET id = NULL WHERE id = 1",
     r"ENUM_CUDA_MEMCPY_OPER\.id, row \d+: is empty \(null\)"),
    (SOFTMAX, "ENUM_CUDA_MEMCPY_OPER", "UPDATE ENUM_CUDA_MEMCPY_OPER SET id = 'one' WHERE id = 1",
     r"ENUM_CUDA_MEMCPY_OPER\.id, row \d+: 'one' is not an integer"),
    (SOFTMAX, "ENUM_CUDA_MEMCPY_OPER", "UPDATE ENUM_CUDA_MEMCPY_OPER SET id = 9e999 WHERE id = 1",
     r"ENUM_CUDA_MEMCPY_OPER\.id, row \d+: inf is infinite"),
    (SOFTMAX, "ENUM_CUDA_MEM_KIND", "UPDATE ENUM_CUDA_MEM_KIND SET id = 'x' WHERE id = 2",
     r"ENUM_CUDA_MEM_KIND\.id, row \d+: 'x' is not an integer"),
    (SOFTMAX, "TARGET_INFO_GPU", "UPDATE TARGET_INFO_GPU SET id = 'gpu0'",
     r"TARGET_INFO_GPU\.id, row 1: 'gpu0' is not an integer"),
    (SOFTMAX, "TARGET_INFO_GPU", "UPDATE TARGET_INFO_GPU SET id = NULL",
     r"TARGET_INFO_GPU\.id, row 1: is empty \(null\)"),
    (SOFTMAX, "TARGET_INFO_GPU", "UPDATE TARGET_INFO_GPU SET cuDevice = 'zero'",
     r"TARGET_INFO_GPU\.cuDevice, row 1: 'zero' is not an integer"),
    (SOFTMAX, "TARGET_INFO_CUDA_DEVICE", "UPDATE TARGET_INFO_CUDA_DEVICE SET gpuId = 'g'",
     r"TARGET_INFO_CUDA_DEVICE\.gpuId, row 1: 'g' is not an integer"),
    (SOFTMAX, "TARGET_INFO_CUDA_DEVICE", "UPDATE TARGET_INFO_CUDA_DEVICE SET cudaId = 'c'",
     r"TARGET_INFO_CUDA_DEVICE\.cudaId, row 1: 'c' is not an integer"),
    (KMEANS, "TARGET_INFO_CUDA_GPU", "UPDATE TARGET_INFO_CUDA_GPU SET deviceId = 'd'",
     r"TARGET_INFO_CUDA_GPU\.deviceId, row 1: 'd' is not an integer"),
    (KMEANS, "StringIds", "UPDATE StringIds SET id = 'abc' WHERE id = (SELECT max(id) FROM StringIds)",
     r"StringIds\.id, row \d+: 'abc' is not an integer"),
], ids=["enum-copy-null", "enum-copy-text", "enum-copy-inf", "enum-mem-text", "gpu-id-text", "gpu-id-null",
        "gpu-cudevice-text", "cuda-device-gpuid-text", "cuda-device-cudaid-text", "cuda-gpu-deviceid-text",
        "stringids-text"])
def test_damaged_metadata_is_one_line_exit_2(shared_traces, tmp_path, capsys, name, table, statement, message):
    """A NULL, text or infinite id in an nsys metadata table is one line naming file, table.column and row, exit 2
    (each was a ValueError, TypeError or OverflowError traceback, exit 1)."""
    from nodecast.cli import main

    path = mutant(shared_traces, name, tmp_path, table, statement)
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}: {message}"):
        read_nsys(path)
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err)


def test_unconstrained_copy_of_a_real_export_still_loads(shared_traces, tmp_path):
    """The mutants' table rebuild alone changes nothing the reader sees (same ops, same GPU names)."""
    original = read_nsys(shared_traces / SOFTMAX)
    path = mutant(shared_traces, SOFTMAX, tmp_path, "TARGET_INFO_GPU", "UPDATE TARGET_INFO_GPU SET id = id")
    rebuilt = read_nsys(path)
    assert rebuilt.counts() == original.counts() and rebuilt.meta.gpus == original.meta.gpus == {0: "Tesla T4"}


@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_occupancy_columns_match_sql(path):
    """Every kernel keeps registersPerThread, static/dynamic shared memory and local memory as the file has them."""
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    if not count(path, table):
        pytest.skip("no kernel in this export")
    want = sorted(sql(path, f"SELECT start, registersPerThread, staticSharedMemory, dynamicSharedMemory, "
                            f"localMemoryPerThread FROM {table}"))
    trace = read_nsys(path)
    k = trace["kind"] == OpKind.KERNEL
    got = sorted(zip(trace["start_ns"][k].tolist(), trace["registers_per_thread"][k].tolist(),
                     trace["static_smem_bytes"][k].tolist(), trace["dynamic_smem_bytes"][k].tolist(),
                     trace["local_mem_per_thread_bytes"][k].tolist(), strict=True))
    assert got == want
    assert (trace["registers_per_thread"][~k] == -1).all()
