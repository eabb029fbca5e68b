"""The SQLite writer fed with CUPTI-like records: nodecast's nsys reader must read what it writes."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.record import activities as A
from nodecast.record.sqlite_writer import TABLES, write_trace
from nodecast.traces.kinds import CopyKind, MemKind, OpKind, TransferClass
from nodecast.traces.load import detect_format, load_trace
from nodecast.traces.trace import MISSING_NS

PID = 31337
API = {(A.KIND_RUNTIME, 20): "cudaMalloc_v3020", (A.KIND_RUNTIME, 41): "cudaMemcpyAsync_v3020",
       (A.KIND_RUNTIME, 211): "cudaLaunchKernel_v7000", (A.KIND_RUNTIME, 131): "cudaStreamSynchronize_v3020",
       (A.KIND_RUNTIME, 54): "cudaMemsetAsync_v3020", (A.KIND_DRIVER, 307): "cuLaunchKernel"}


def api(cbid: int, corr: int, start: int, end: int, kind: int = A.KIND_RUNTIME) -> dict:
    """An API record (CUpti_ActivityAPI fields)."""
    return {"kind": kind, "cbid": cbid, "correlation_id": corr, "start": start, "end": end, "process_id": PID,
            "thread_id": 7, "return_value": 0}


def copy(corr: int, start: int, n: int, copy_kind: int, src: int, dst: int, device: int = 0, stream: int = 13) -> dict:
    """A memcpy record (CUpti_ActivityMemcpy fields; CUPTI memory-kind numbering)."""
    return {"kind": A.KIND_MEMCPY, "copy_kind": copy_kind, "src_kind": src, "dst_kind": dst, "bytes": n, "start": start,
            "end": start + 1000 + n // 10, "device_id": device, "context_id": 1 + device, "stream_id": stream,
            "correlation_id": corr, "graph_node_id": 0}


def records() -> list[dict]:
    """A small program: malloc, 3 copies (pageable/pinned HtoD, pinned DtoH), 2 kernels, a memset, a peer copy,
    two UM migrations, a stream sync, a driver-launched kernel, the devices and contexts."""
    recs = [
        {"kind": A.KIND_DEVICE, "id": 0, "name": "NVIDIA H100 80GB HBM3", "global_memory_bandwidth": 3_352_320_000,
         "core_clock_rate": 1_980_000, "global_memory_size": 85_000_000_000, "num_multiprocessors": 132,
         "compute_capability_major": 9, "compute_capability_minor": 0},
        {"kind": A.KIND_DEVICE, "id": 1, "name": "NVIDIA H100 80GB HBM3", "num_multiprocessors": 132},
        {"kind": A.KIND_CONTEXT, "context_id": 1, "device_id": 0},
        {"kind": A.KIND_CONTEXT, "context_id": 2, "device_id": 1},
        api(20, 1, 1_000, 2_000),
        api(41, 2, 3_000, 3_500), copy(2, 4_000, 1 << 20, 1, 1, 3),       # HtoD pageable -> device
        api(41, 3, 5_000, 5_200), copy(3, 6_000, 4096, 1, 2, 3),          # HtoD pinned
        api(211, 4, 7_000, 7_100),
        {"kind": A.KIND_CONCURRENT_KERNEL, "name": "_Z6vecAddPdS_S_i", "start": 8_000, "end": 9_000, "device_id": 0,
         "context_id": 1, "stream_id": 13, "correlation_id": 4, "grid_x": 40, "grid_y": 1, "grid_z": 1, "block_x": 256,
         "block_y": 1, "block_z": 1, "registers_per_thread": 16, "grid_id": 1},
        api(211, 5, 7_200, 7_300),
        {"kind": A.KIND_CONCURRENT_KERNEL, "name": "_Z6vecAddPdS_S_i", "start": 9_100, "end": 9_900, "device_id": 0,
         "context_id": 1, "stream_id": 13, "correlation_id": 5, "grid_x": 40, "grid_y": 1, "grid_z": 1, "block_x": 256,
         "block_y": 1, "block_z": 1, "registers_per_thread": 16, "grid_id": 2},
        api(54, 6, 10_000, 10_050),
        {"kind": A.KIND_MEMSET, "bytes": 512, "value": 0, "memory_kind": 3, "start": 10_100, "end": 10_200,
         "device_id": 0, "context_id": 1, "stream_id": 13, "correlation_id": 6},
        api(41, 7, 11_000, 11_100), copy(7, 12_000, 4096, 2, 3, 2),        # DtoH pinned
        api(41, 8, 13_000, 13_100),
        {"kind": A.KIND_MEMCPY2, "copy_kind": 10, "src_kind": 3, "dst_kind": 3, "bytes": 1 << 16, "start": 14_000,
         "end": 15_000, "device_id": 0, "context_id": 1, "stream_id": 13, "correlation_id": 8, "src_device_id": 0,
         "dst_device_id": 1, "src_context_id": 1, "dst_context_id": 2},
        {"kind": A.KIND_UNIFIED_MEMORY_COUNTER, "counter_kind": A.UM_BYTES_HTOD, "value": 65536, "start": 16_000,
         "end": 16_500, "src_id": 0, "dst_id": 1, "flags_": 2, "address": 0x7F0000000000, "stream_id": 0,
         "process_id": PID},
        {"kind": A.KIND_UNIFIED_MEMORY_COUNTER, "counter_kind": A.UM_BYTES_DTOH, "value": 4096, "start": 17_000,
         "end": 17_100, "src_id": 1, "dst_id": 0, "flags_": 2, "address": 0x7F0000010000, "stream_id": 0,
         "process_id": PID},
        api(131, 9, 18_000, 19_000),
        {"kind": A.KIND_SYNCHRONIZATION, "type": 3, "start": 18_100, "end": 18_900, "context_id": 2, "stream_id": 14,
         "correlation_id": 9, "cuda_event_id": 0xFFFFFFFF},
        api(307, 10, 20_000, 20_100, kind=A.KIND_DRIVER),
        {"kind": A.KIND_CONCURRENT_KERNEL, "name": "nc_peak", "start": 20_200, "end": 30_000, "device_id": 1,
         "context_id": 2, "stream_id": 14, "correlation_id": 10, "grid_x": 1056, "grid_y": 1, "grid_z": 1,
         "block_x": 256, "block_y": 1, "block_z": 1, "grid_id": 3},
        {"kind": 17},  # an overhead record: not written
    ]
    return recs


def rows():
    """The records converted, kernel names demangled as the parent process does."""
    dem = {"_Z6vecAddPdS_S_i": "vecAdd(double*, double*, double*, int)"}
    c = A.Converter(pid=PID, api_name=lambda k, cb: API[(k, cb)], demangle=lambda s: dem.get(s, s))
    return [r for r in (c.convert(x) for x in records()) if r is not None]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    """The records written to a SQLite file."""
    path = tmp_path_factory.mktemp("rec") / "trace.sqlite"
    counts = write_trace(rows(), path, meta={"EXPORT_PRODUCT_NAME": "nodecast record"}, processes={PID: "python app.py"})
    assert counts[TABLES["KERNEL"]] == 3
    return path


def test_detected_and_read_as_an_nsys_export(trace_file):
    """load_trace detects the file as an nsys export and counts 3 kernels, 6 copies, 1 memset, 1 sync."""
    assert detect_format(trace_file) == "nsys"
    trace = load_trace(trace_file)
    assert trace.counts() == {"kernel": 3, "memcpy": 6, "memset": 1, "sync": 1}


def test_copy_kinds_memory_kinds_and_bytes(trace_file):
    """Each copy decodes to the direction, memory kinds and bytes it was recorded with."""
    trace = load_trace(trace_file)
    copies = trace["kind"] == OpKind.MEMCPY
    got = sorted(zip(trace["copy_kind"][copies].tolist(), trace["src_mem"][copies].tolist(),
                     trace["dst_mem"][copies].tolist(), trace["bytes"][copies].tolist(), strict=True))
    expected = sorted([
        (CopyKind.HTOD, MemKind.PAGEABLE, MemKind.DEVICE, 1 << 20),
        (CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE, 4096),
        (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED, 4096),
        (CopyKind.PEER, MemKind.DEVICE, MemKind.DEVICE, 1 << 16),
        (CopyKind.UVM_HTOD, MemKind.MANAGED, MemKind.MANAGED, 65536),
        (CopyKind.UVM_DTOH, MemKind.MANAGED, MemKind.MANAGED, 4096),
    ])
    assert got == [tuple(int(v) for v in e) for e in expected]
    classes = set(trace.transfer_class[copies].tolist())
    assert {TransferClass.HTOD_PAGEABLE, TransferClass.HTOD_PINNED, TransferClass.DTOH_PINNED, TransferClass.PEER,
            TransferClass.HTOD_MANAGED, TransferClass.DTOH_MANAGED} == classes


def test_correlation_gives_api_times(trace_file):
    """Copies, kernels, memset and sync get the start/end of their API call; UM migrations (correlation 0) none."""
    trace = load_trace(trace_file)
    starts = dict(zip(trace["correlation"].tolist(), trace["api_start_ns"].tolist(), strict=True))
    ends = dict(zip(trace["correlation"].tolist(), trace["api_end_ns"].tolist(), strict=True))
    assert (starts[2], ends[2]) == (3_000, 3_500)
    assert (starts[4], starts[6], starts[9]) == (7_000, 10_000, 18_000)
    assert starts[10] == 20_000  # a driver-launched kernel joins its driver record
    uvm = trace["copy_kind"] >= CopyKind.UVM_HTOD
    assert np.all(trace["api_start_ns"][uvm] == MISSING_NS)


def test_kernels_names_devices_and_launch(trace_file):
    """Kernel rows have demangled names, their device and launch configuration; GPUs are named per device."""
    trace = load_trace(trace_file)
    kernels = trace["kind"] == OpKind.KERNEL
    assert sorted(set(trace.kernel_names()[kernels])) == ["nc_peak", "vecAdd(double*, double*, double*, int)"]
    assert sorted(trace["device"][kernels].tolist()) == [0, 0, 1]
    assert set(trace["grid_x"][kernels].tolist()) == {40, 1056} and set(trace["block_x"][kernels].tolist()) == {256}
    assert trace.meta.gpus == {0: "NVIDIA H100 80GB HBM3", 1: "NVIDIA H100 80GB HBM3"}


def test_peer_copy_devices_and_sync_device(trace_file):
    """The peer copy keeps src 0 / dst 1; the sync (context 2) lands on device 1 through the CONTEXT record."""
    trace = load_trace(trace_file)
    peer = trace["copy_kind"] == CopyKind.PEER
    assert (int(trace["src_device"][peer][0]), int(trace["dst_device"][peer][0])) == (0, 1)
    sync = trace["kind"] == OpKind.SYNC
    assert int(trace["device"][sync][0]) == 1 and int(trace["stream"][sync][0]) == 14


def test_tables_columns_and_enums_as_nsys(trace_file):
    """Table and column names are nsys's; ENUM_CUDA_MEM_KIND uses nsys's shifted numbering; raw kinds are shifted."""
    con = sqlite3.connect(trace_file)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"StringIds", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE", "TARGET_INFO_GPU",
                "ENUM_NSYS_EVENT_CLASS", "PROCESSES", "EXPORT_META_DATA", *TABLES.values()} <= tables
        cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_MEMCPY)")]
        assert cols[:12] == ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
                             "bytes", "copyKind", "deprecatedSrcId", "srcKind", "dstKind"]
        assert con.execute("SELECT name FROM ENUM_CUDA_MEM_KIND WHERE id = 0").fetchone() == ("CUDA_MEMOPR_MEMORY_KIND_PAGEABLE",)
        raw = con.execute("SELECT srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE correlationId = 3").fetchone()
        assert raw == (1, 2)  # CUPTI 2 (PINNED), 3 (DEVICE) -> nsys 1, 2
        assert con.execute("SELECT value FROM StringIds s JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.nameId = s.id "
                           "WHERE r.correlationId = 2").fetchone() == ("cudaMemcpyAsync_v3020",)
        assert con.execute("SELECT memoryBandwidth, clockRate FROM TARGET_INFO_GPU WHERE id = 0").fetchone() == (
            3_352_320_000_000, 1_980_000_000)
        assert con.execute("SELECT pid, name FROM PROCESSES").fetchall() == [(PID, "python app.py")]
    finally:
        con.close()


def test_atomic_nothing_left_on_failure(tmp_path):
    """A row the writer cannot take aborts the write and leaves no file behind."""
    out = tmp_path / "t.sqlite"

    def bad_rows():
        yield from rows()
        yield {"table": "NOPE"}

    with pytest.raises(ValueError, match="unknown row table"):
        write_trace(bad_rows(), out)
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder(tmp_path):
    """A missing output folder is an InputError naming it."""
    with pytest.raises(InputError, match="folder does not exist"):
        write_trace(rows(), tmp_path / "nope" / "t.sqlite")


def test_many_rows_span_batches(tmp_path):
    """More rows than one insert batch are all written."""
    c = A.Converter(pid=1)
    recs = (c.convert(copy(i + 1, 1000 * i, 8, 1, 2, 3)) for i in range(60_000))
    counts = write_trace(recs, tmp_path / "big.sqlite")
    assert counts[TABLES["MEMCPY"]] == 60_000
    assert load_trace(tmp_path / "big.sqlite").counts() == {"memcpy": 60_000}


def test_unmapped_sync_context_is_noted(tmp_path):
    """A sync whose context never appears gets device 0 and a note in EXPORT_META_DATA."""
    c = A.Converter(pid=1)
    recs = [c.convert(copy(1, 0, 8, 1, 2, 3)),
            c.convert({"kind": A.KIND_SYNCHRONIZATION, "type": 4, "start": 1, "end": 2, "context_id": 99})]
    write_trace(recs, tmp_path / "s.sqlite")
    con = sqlite3.connect(tmp_path / "s.sqlite")
    try:
        note = con.execute("SELECT value FROM EXPORT_META_DATA WHERE name = 'NODECAST_UNMAPPED_SYNC_CONTEXTS'").fetchone()
    finally:
        con.close()
    assert note == ("1 synchronization rows given device 0",)
