"""nvprof SQLite reader: every real database against direct SQL counts, memory kinds, API times."""

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
from nodecast.traces.nvprof import read_nvprof
from nodecast.traces.trace import MISSING_NS

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
NVPROF = sorted(TRACES.glob("nvprof_*.nvvp"))

# The test's own reading of CUPTI's CUpti_ActivityMemcpyKind numbers.
EXPECTED_COPY = {0: CopyKind.UNKNOWN, 1: CopyKind.HTOD, 2: CopyKind.DTOH, 3: CopyKind.HTOD, 4: CopyKind.DTOH,
                 5: CopyKind.DTOD, 6: CopyKind.DTOD, 7: CopyKind.DTOD, 8: CopyKind.DTOD, 9: CopyKind.HTOH,
                 10: CopyKind.PEER}


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


def count(path: Path, *names: str) -> int:
    """Rows of the CUPTI_ACTIVITY_KIND_<name> tables that exist."""
    present = tables(path)
    return sum(sql(path, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_{n}")[0][0]
               for n in names if f"CUPTI_ACTIVITY_KIND_{n}" in present)


@pytest.mark.parametrize("path", NVPROF, ids=lambda p: p.name)
def test_counts_match_sql(path):
    """Kernels, memsets, syncs and copies per direction (count and bytes) equal direct SQL counts."""
    trace = read_nvprof(path)
    kind = trace["kind"]
    assert np.sum(kind == OpKind.KERNEL) == count(path, "CONCURRENT_KERNEL", "KERNEL")
    assert np.sum(kind == OpKind.MEMSET) == count(path, "MEMSET")
    assert np.sum(kind == OpKind.SYNC) == count(path, "SYNCHRONIZATION")
    expected: dict[CopyKind, list[int]] = {}
    for table in ("MEMCPY", "MEMCPY2"):
        if f"CUPTI_ACTIVITY_KIND_{table}" not in tables(path):
            continue
        for raw, n, total in sql(path, f"SELECT copyKind, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_{table} GROUP BY 1"):
            entry = expected.setdefault(EXPECTED_COPY[raw], [0, 0])
            entry[0] += n
            entry[1] += total
    copies = kind == OpKind.MEMCPY
    got = {CopyKind(k): [int(np.sum(copies & (trace["copy_kind"] == k))),
                         int(trace["bytes"][copies & (trace["copy_kind"] == k)].sum())]
           for k in np.unique(trace["copy_kind"][copies])}
    assert got == expected


@pytest.mark.parametrize("path", NVPROF, ids=lambda p: p.name)
def test_api_times_from_runtime_and_driver(path):
    """Ops get CPU API times exactly where correlationId matches a RUNTIME or DRIVER record."""
    present = tables(path)
    matched = 0
    for table in ("CONCURRENT_KERNEL", "KERNEL", "MEMCPY", "MEMCPY2", "MEMSET", "SYNCHRONIZATION"):
        if f"CUPTI_ACTIVITY_KIND_{table}" in present:
            matched += sql(path, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_{table} a WHERE a.correlationId > 0 AND"
                                 " (a.correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME) OR"
                                 "  a.correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_DRIVER))")[0][0]
    trace = read_nvprof(path)
    has_api = trace["api_start_ns"] != MISSING_NS
    assert has_api.sum() == matched == len(trace)  # every op of these files has its API call
    assert np.all(trace["api_end_ns"] >= trace["api_start_ns"])


def test_memcpy_correlation_not_runtime_correlation(shared_traces):
    """In the real files runtimeCorrelationId is 0 and correlationId is what matches the API tables."""
    path = shared_traces / "nvprof_vectoradd-1M_t4.nvvp"
    assert sql(path, "SELECT DISTINCT runtimeCorrelationId FROM CUPTI_ACTIVITY_KIND_MEMCPY") == [(0,)]
    runtime = dict(sql(path, "SELECT correlationId, start FROM CUPTI_ACTIVITY_KIND_RUNTIME"))
    trace = read_nvprof(path)
    copies = np.flatnonzero(trace["kind"] == OpKind.MEMCPY)
    assert [int(trace["api_start_ns"][i]) for i in copies] == [runtime[int(trace["correlation"][i])] for i in copies]


def test_driver_api_launches(shared_traces):
    """LAMMPS launches through the driver API: those kernels' times come from CUPTI_ACTIVITY_KIND_DRIVER."""
    path = shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp"
    driver = dict(sql(path, "SELECT correlationId, end FROM CUPTI_ACTIVITY_KIND_DRIVER"))
    trace = read_nvprof(path)
    kernels = np.flatnonzero(trace["kind"] == OpKind.KERNEL)
    via_driver = [i for i in kernels if int(trace["correlation"][i]) in driver]
    assert len(via_driver) == sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL k JOIN"
                                        " CUPTI_ACTIVITY_KIND_DRIVER d ON d.correlationId = k.correlationId")[0][0] > 0
    assert all(trace["api_end_ns"][i] == driver[int(trace["correlation"][i])] for i in via_driver)


@pytest.mark.parametrize("mode", ["htod", "dtoh"])
@pytest.mark.parametrize("node", ["titan-k20x", "summit-v100"])
def test_ahead_pinned_vs_pageable(shared_traces, mode, node):
    """AHEAD bandwidthTest: the pinned run's host side is PINNED, the pageable run's PAGEABLE."""
    for memory, kind in (("pinned", MemKind.PINNED), ("pageable", MemKind.PAGEABLE)):
        path = shared_traces / f"nvprof_ahead-bandwidthtest-{mode}-{memory}_{node}.nvvp"
        if not path.exists():
            continue  # Summit has only the htod pair
        trace = read_nvprof(path)
        direction = CopyKind.HTOD if mode == "htod" else CopyKind.DTOH
        rows = trace["copy_kind"] == direction
        if mode == "dtoh":  # the sweep's 29 warm-up HtoD copies are not the measured direction
            assert rows.sum() == 2900
        host = trace["src_mem"] if mode == "htod" else trace["dst_mem"]
        device = trace["dst_mem"] if mode == "htod" else trace["src_mem"]
        assert np.all(host[rows] == kind)
        assert np.all(device[rows] == MemKind.DEVICE)


def test_device_to_device_sweep(shared_traces):
    """The DtoD bandwidthTest has 2900 DTOD copies between DEVICE memories."""
    trace = read_nvprof(shared_traces / "nvprof_ahead-bandwidthtest-dtod_titan-k20x.nvvp")
    dtod = trace["copy_kind"] == CopyKind.DTOD
    assert dtod.sum() == 2900
    assert np.all(trace["src_mem"][dtod] == MemKind.DEVICE) and np.all(trace["dst_mem"][dtod] == MemKind.DEVICE)


@pytest.mark.parametrize("path", NVPROF, ids=lambda p: p.name)
def test_names_and_gpus(path):
    """Kernel names come from StringTable, and every op's device has a GPU name from the DEVICE table."""
    trace = read_nvprof(path)
    kernels = trace["kind"] == OpKind.KERNEL
    expected = {v for (v,) in sql(path, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL k"
                                        " JOIN StringTable s ON s._id_ = k.name")}
    assert set(trace.kernel_names()[kernels]) == expected
    assert set(np.unique(trace["device"]).tolist()) <= set(trace.meta.gpus)
    device_names = {v for (v,) in sql(path, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_DEVICE d"
                                            " JOIN StringTable s ON s._id_ = d.name")}
    assert set(trace.meta.gpus.values()) == device_names


def test_memset_kinds_by_schema(shared_traces):
    """Schema 12 memsets carry memoryKind 3 (DEVICE); schema 8 has no such column, so UNKNOWN."""
    v12 = read_nvprof(shared_traces / "nvprof_mxnet-cnn-inference_titan-v.nvvp")
    v8 = read_nvprof(shared_traces / "nvprof_tensorflow-cnn_gtx-titan-x.nvvp")
    assert np.all(v12["dst_mem"][v12["kind"] == OpKind.MEMSET] == MemKind.DEVICE)
    assert np.all(v8["dst_mem"][v8["kind"] == OpKind.MEMSET] == MemKind.UNKNOWN)


def test_sync_device_from_context(shared_traces):
    """Synchronization rows take their device from CUPTI_ACTIVITY_KIND_CONTEXT (0 here) and keep stream -1."""
    trace = read_nvprof(shared_traces / "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x.nvvp")
    syncs = trace["kind"] == OpKind.SYNC
    assert syncs.sum() == 29
    assert np.all(trace["device"][syncs] == 0) and np.all(trace["stream"][syncs] == -1)


def test_peer_copies_from_memcpy2(shared_traces, tmp_path):
    """A MEMCPY2 row becomes a PEER copy with its source and destination devices."""
    path = tmp_path / "peer.nvvp"
    shutil.copy(shared_traces / "nvprof_vectoradd-1M_t4.nvvp", path)
    path.chmod(0o644)
    row = {"copyKind": 10, "srcKind": 3, "dstKind": 3, "bytes": 4096, "start": 5, "end": 9, "deviceId": 1,
           "contextId": 1, "streamId": 7, "srcDeviceId": 1, "dstDeviceId": 0, "correlationId": 0}
    with sqlite3.connect(path) as con:
        columns = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_MEMCPY2)") if r[1] != "_id_"]
        values = [row.get(c, 0) for c in columns]  # every other NOT NULL column: 0
        con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY2 ({', '.join(columns)})"
                    f" VALUES ({', '.join('?' * len(columns))})", values)
    trace = read_nvprof(path)
    peer = np.flatnonzero(trace["copy_kind"] == CopyKind.PEER)
    assert len(peer) == 1
    i = peer[0]
    assert (trace["bytes"][i], trace["device"][i], trace["src_device"][i], trace["dst_device"][i]) == (4096, 1, 1, 0)


def test_adbc_and_sqlite3_paths_agree(shared_traces, monkeypatch):
    """The ADBC bulk path and the sqlite3 fallback give identical columns."""
    path = shared_traces / "nvprof_ahead-lammps_summit-v100.nvvp"
    fast = read_nvprof(path)
    monkeypatch.setattr(_sqlite, "USE_ADBC", False)
    slow = read_nvprof(path)
    assert fast.names == slow.names
    for name, column in fast.columns.items():
        np.testing.assert_array_equal(column, slow[name], err_msg=name)


# -- bad values in the shipped sample: one InputError naming table and column ----------------------------------

SAMPLE = "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x.nvvp"


def edited_sample(tmp_path: Path, *statements: str) -> Path:
    """A copy of the shipped nvprof sample with SQL ``statements`` applied."""
    from importlib import resources

    path = tmp_path / "edited.nvvp"
    path.write_bytes((resources.files("nodecast") / "data" / "samples" / SAMPLE).read_bytes())
    con = sqlite3.connect(path)
    with con:
        for statement in statements:
            con.execute(statement)
    con.close()
    return path


@pytest.mark.parametrize("adbc", [True, False], ids=["adbc", "sqlite3"])
@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ('UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET "end" = start - 600 WHERE _id_ % 100 = 0',
         r"edited\.nvvp: 29 of 2,929 GPU ops end before they start \(29 memcpy; first: memcpy .* duration -600 ns\)"),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -1 WHERE _id_ % 100 = 0",
         r"29 of 2,929 GPU ops have a negative byte count \(29 memcpy; first: .* bytes -1 B\)"),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 9223372036854775807 WHERE _id_ % 100 = 0",
         r"29 of 2,929 GPU ops move more than 2\^50 B \(1 PiB\) \(29 memcpy; first: .* bytes 9223372036854775807 B\)"),
        ("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN bytes",
         r"CUPTI_ACTIVITY_KIND_MEMCPY: the table has no bytes column"),
        ("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN copyKind",
         r"CUPTI_ACTIVITY_KIND_MEMCPY: the table has no copyKind column"),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = 'x' WHERE _id_ % 100 = 0",
         r"CUPTI_ACTIVITY_KIND_MEMCPY\.start: 29 rows hold text where a number belongs \(first: 'x' in rowid 100\)"),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET deviceId = 40000 WHERE _id_ = 5",
         r"CUPTI_ACTIVITY_KIND_MEMCPY\.deviceId: value 40000 is out of range"),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = 9e999 WHERE _id_ = 5",
         r"CUPTI_ACTIVITY_KIND_MEMCPY\.start: 1 rows hold a number beyond a 64-bit integer \(first: Inf in rowid 5\)"),
    ],
    ids=["negative-duration", "negative-bytes", "huge-bytes", "no-bytes", "no-copyKind", "text", "device-beyond-int16",
         "infinite-start"],
)
def test_bad_values_are_refused(tmp_path, monkeypatch, adbc, statement, message):
    """Damaged values or a dropped column give one InputError that says what is wrong (they loaded silently:
    negative times, 0 B copies, wrapped device ids, or 'table changed while it was read')."""
    monkeypatch.setattr(_sqlite, "USE_ADBC", adbc)
    with pytest.raises(InputError, match=message):
        read_nvprof(edited_sample(tmp_path, statement))


# -- damaged metadata tables: seeded mutants of a real database (issue 10, item 9) ------------------------------

VECTORADD = "nvprof_vectoradd-1M_t4.nvvp"  # one context, one device, a synchronization (read through CONTEXT)


def mutant(shared: Path, tmp_path: Path, table: str, statement: str) -> Path:
    """A copy of the real ``VECTORADD`` database with one cell of ``table`` changed by ``statement``.

    The table is first rebuilt without its constraints (``CREATE TABLE ... AS SELECT``: same rows, same column
    affinities), as a hand edit may leave it, so that NULL can be stored where nvprof declares ``NOT NULL``.
    """
    path = tmp_path / "mutant.nvvp"
    shutil.copy(shared / VECTORADD, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    with con:
        con.execute(f'ALTER TABLE "{table}" RENAME TO _original')
        con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM _original')
        con.execute("DROP TABLE _original")
        assert con.execute(statement).rowcount == 1
    con.close()
    return path


@pytest.mark.parametrize(("table", "statement", "message"), [
    ("CUPTI_ACTIVITY_KIND_CONTEXT", "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET contextId = NULL",
     r"CUPTI_ACTIVITY_KIND_CONTEXT\.contextId, row 1: is empty \(null\)"),
    ("CUPTI_ACTIVITY_KIND_CONTEXT", "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET contextId = 'ctx'",
     r"CUPTI_ACTIVITY_KIND_CONTEXT\.contextId, row 1: 'ctx' is not an integer"),
    ("CUPTI_ACTIVITY_KIND_CONTEXT", "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET contextId = 1e300",
     r"CUPTI_ACTIVITY_KIND_CONTEXT\.contextId, row 1: 1e\+300 is out of range \(must be a 64-bit integer\)"),
    ("CUPTI_ACTIVITY_KIND_CONTEXT", "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET deviceId = NULL",
     r"CUPTI_ACTIVITY_KIND_CONTEXT\.deviceId, row 1: is empty \(null\)"),
    ("CUPTI_ACTIVITY_KIND_CONTEXT", "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET deviceId = 'dev'",
     r"CUPTI_ACTIVITY_KIND_CONTEXT\.deviceId, row 1: 'dev' is not an integer"),
    ("CUPTI_ACTIVITY_KIND_CONTEXT", "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET deviceId = 70000",
     r"CUPTI_ACTIVITY_KIND_CONTEXT\.deviceId, row 1: 70000 is out of range \(must be >= -32,768 and <= 32,767\)"),
    ("CUPTI_ACTIVITY_KIND_DEVICE", "UPDATE CUPTI_ACTIVITY_KIND_DEVICE SET id = 'gpu'",
     r"CUPTI_ACTIVITY_KIND_DEVICE\.id, row 1: 'gpu' is not an integer"),
    ("StringTable", "UPDATE StringTable SET _id_ = 'abc' WHERE _id_ = 2",
     r"StringTable\._id_, row 3: 'abc' is not an integer"),
], ids=["context-null", "context-text", "context-1e300", "device-null", "device-text", "device-beyond-int16",
        "device-table-id-text", "stringtable-text"])
def test_damaged_metadata_is_one_line_exit_2(shared_traces, tmp_path, capsys, table, statement, message):
    """A NULL, text or out-of-range id in an nvprof metadata table is one line naming file, table.column and row,
    exit 2 (each was a ValueError, TypeError or OverflowError traceback, exit 1; a device id of 70000 wrapped)."""
    from nodecast.cli import main

    path = mutant(shared_traces, tmp_path, table, statement)
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}: {message}"):
        read_nvprof(path)
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err)


def test_unconstrained_copy_of_a_real_database_still_loads(shared_traces, tmp_path):
    """The mutants' table rebuild alone changes nothing the reader sees (same ops, sync device, GPU name)."""
    original = read_nvprof(shared_traces / VECTORADD)
    path = mutant(shared_traces, tmp_path, "CUPTI_ACTIVITY_KIND_CONTEXT",
                  "UPDATE CUPTI_ACTIVITY_KIND_CONTEXT SET deviceId = deviceId")
    rebuilt = read_nvprof(path)
    assert rebuilt.counts() == original.counts() and rebuilt.meta.gpus == original.meta.gpus
    assert np.array_equal(rebuilt["device"], original["device"])


@pytest.mark.parametrize("path", NVPROF, ids=lambda p: p.name)
def test_occupancy_columns_match_sql(path):
    """Kernels keep CONCURRENT_KERNEL's registersPerThread, static/dynamic shared memory and local memory."""
    table = "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"
    if not count(path, "CONCURRENT_KERNEL"):
        pytest.skip("no kernel in this database")
    want = sorted(sql(path, f"SELECT start, registersPerThread, staticSharedMemory, dynamicSharedMemory, "
                            f"localMemoryPerThread FROM {table}"))
    trace = read_nvprof(path)
    k = trace["kind"] == OpKind.KERNEL
    got = sorted(zip(trace["start_ns"][k].tolist(), trace["registers_per_thread"][k].tolist(),
                     trace["static_smem_bytes"][k].tolist(), trace["dynamic_smem_bytes"][k].tolist(),
                     trace["local_mem_per_thread_bytes"][k].tolist(), strict=True))
    assert got == want
