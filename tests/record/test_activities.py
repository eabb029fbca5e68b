"""CUPTI activity records (as plain dicts or objects with CUPTI's fields) -> nsys table rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nodecast.record import activities as A


def conv(**kw) -> A.Converter:
    """A converter for process 4242."""
    return A.Converter(pid=4242, **kw)


@pytest.mark.parametrize(("cupti", "nsys"), [(0, 7), (1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 6), (None, 7), (99, 7)])
def test_memory_kinds_shift_by_one(cupti, nsys):
    """CUPTI's 0 UNKNOWN, 1 PAGEABLE ... 7 MANAGED_STATIC become nsys's 7 UNKNOWN, 0 PAGEABLE ... 6."""
    assert A.nsys_mem_kind(cupti) == nsys


def test_memcpy_record():
    """A pinned HtoD copy keeps CUPTI's copy kind, shifts memory kinds and carries ids and bytes."""
    row = conv().convert({"kind": A.KIND_MEMCPY, "copy_kind": 1, "src_kind": 2, "dst_kind": 3, "bytes": 4096,
                          "start": 100, "end": 300, "device_id": 1, "context_id": 5, "stream_id": 13,
                          "correlation_id": 77, "graph_node_id": 0})
    assert row["table"] == "MEMCPY"
    assert (row["copyKind"], row["srcKind"], row["dstKind"]) == (1, 1, 2)
    assert (row["bytes"], row["start"], row["end"], row["deviceId"], row["streamId"], row["correlationId"]) == (
        4096, 100, 300, 1, 13, 77)
    assert row["globalPid"] == 4242 << 24 and row["graphNodeId"] is None and row["srcDeviceId"] is None


def test_peer_copy_record():
    """A MEMCPY2 (peer) record keeps its source and destination devices."""
    row = conv().convert({"kind": A.KIND_MEMCPY2, "copy_kind": 10, "src_kind": 3, "dst_kind": 3, "bytes": 8,
                          "start": 1, "end": 2, "device_id": 0, "src_device_id": 0, "dst_device_id": 1,
                          "src_context_id": 1, "dst_context_id": 2})
    assert (row["copyKind"], row["srcDeviceId"], row["dstDeviceId"], row["dstContextId"]) == (10, 0, 1, 2)


def test_kernel_record_from_an_object():
    """Attribute-style records (as cupti-python gives) work; names and launch configuration are kept."""
    rec = SimpleNamespace(kind=A.KIND_CONCURRENT_KERNEL, name="_Z6vecAddPdS_S_i", start=10, end=20, device_id=0,
                          context_id=1, stream_id=7, correlation_id=3, grid_x=128, grid_y=1, grid_z=1, block_x=256,
                          block_y=1, block_z=1, registers_per_thread=32, static_shared_memory=0,
                          dynamic_shared_memory=1024, local_memory_per_thread=0, local_memory_total=0, grid_id=9)
    row = conv(demangle=lambda s: "vecAdd(double*, double*, double*, int)").convert(rec)
    assert row["table"] == "KERNEL"
    assert (row["mangledName"], row["demangledName"], row["shortName"]) == (
        "_Z6vecAddPdS_S_i", "vecAdd(double*, double*, double*, int)", "vecAdd")
    assert (row["gridX"], row["blockX"], row["dynamicSharedMemory"], row["gridId"]) == (128, 256, 1024, 9)


def test_api_records():
    """Runtime calls get eventClass 0, driver calls 1, a name and nsys's serialized thread id."""
    names = {(A.KIND_RUNTIME, 41): "cudaMemcpyAsync_v3020", (A.KIND_DRIVER, 307): "cuLaunchKernel"}
    c = conv(api_name=lambda kind, cbid: names[(kind, cbid)])
    rt = c.convert({"kind": A.KIND_RUNTIME, "cbid": 41, "start": 5, "end": 9, "process_id": 4242, "thread_id": 99,
                    "correlation_id": 77, "return_value": 0})
    drv = c.convert({"kind": A.KIND_DRIVER, "cbid": 307, "start": 6, "end": 8, "process_id": 4242, "thread_id": 99,
                     "correlation_id": 78, "return_value": 0})
    assert (rt["eventClass"], rt["nameId"], rt["correlationId"]) == (0, "cudaMemcpyAsync_v3020", 77)
    assert (drv["eventClass"], drv["nameId"]) == (1, "cuLaunchKernel")
    assert rt["globalTid"] == (4242 << 24) | 99
    assert conv().convert({"kind": A.KIND_RUNTIME, "cbid": 41})["nameId"] == "runtime cbid 41"


@pytest.mark.parametrize(("counter", "copy_kind", "device", "src_dev", "dst_dev"), [
    (A.UM_BYTES_HTOD, 11, 1, None, None), (A.UM_BYTES_DTOH, 12, 0, None, None), (A.UM_BYTES_DTOD, 13, 1, 0, 1),
])
def test_unified_memory_migrations(counter, copy_kind, device, src_dev, dst_dev):
    """UM byte counters become MEMCPY rows of nsys kinds 11-13, memory kinds UNKNOWN, correlation 0, with the cause."""
    row = conv().convert({"kind": A.KIND_UNIFIED_MEMORY_COUNTER, "counter_kind": counter, "value": 65536,
                          "start": 1, "end": 2, "src_id": 0, "dst_id": 1, "flags_": 2, "address": 0x7F00,
                          "stream_id": 0, "process_id": 4242})
    assert row["table"] == "MEMCPY"
    assert (row["copyKind"], row["bytes"], row["deviceId"], row["correlationId"]) == (copy_kind, 65536, device, 0)
    assert (row["srcKind"], row["dstKind"], row["migrationCause"], row["virtualAddress"]) == (7, 7, 2, 0x7F00)
    assert (row["srcDeviceId"], row["dstDeviceId"]) == (src_dev, dst_dev)


def test_page_fault_counters_are_not_rows():
    """UM counters that are not transfers (page faults) give no row and are counted as skipped."""
    c = conv()
    assert c.convert({"kind": A.KIND_UNIFIED_MEMORY_COUNTER, "counter_kind": 3}) is None
    assert c.skipped == {A.KIND_UNIFIED_MEMORY_COUNTER: 1}


def test_synchronization_and_context():
    """A sync row keeps its context for the writer to map to a device; 0xFFFFFFFF stream means none."""
    c = conv()
    row = c.convert({"kind": A.KIND_SYNCHRONIZATION, "type": 4, "start": 1, "end": 5, "context_id": 3,
                     "stream_id": 0xFFFFFFFF, "correlation_id": 12, "cuda_event_id": 0xFFFFFFFF})
    assert (row["syncType"], row["contextId"], row["deviceId"], row["streamId"]) == (4, 3, None, 0xFFFFFFFF)
    assert c.convert({"kind": A.KIND_CONTEXT, "context_id": 3, "device_id": 1}) == {
        "table": "CONTEXT", "contextId": 3, "deviceId": 1}


def test_memset_record():
    """A memset keeps its bytes and value; its memory kind is shifted."""
    row = conv().convert({"kind": A.KIND_MEMSET, "bytes": 64, "value": 0, "memory_kind": 3, "start": 1, "end": 2,
                          "device_id": 0, "context_id": 1, "stream_id": 7, "correlation_id": 4})
    assert (row["table"], row["bytes"], row["memKind"]) == ("MEMSET", 64, 2)


def test_device_record_units():
    """CUPTI's KB/s and kHz become TARGET_INFO_GPU's B/s and Hz; the UUID is formatted like nvidia-smi's."""
    row = conv().convert({"kind": A.KIND_DEVICE, "id": 0, "name": "Tesla V100", "global_memory_bandwidth": 898_048_000,
                          "core_clock_rate": 1_530_000, "global_memory_size": 16 << 30, "num_multiprocessors": 80,
                          "compute_capability_major": 7, "compute_capability_minor": 0,
                          "uuid": SimpleNamespace(bytes=bytes(range(16)))})
    assert row["memoryBandwidth"] == 898_048_000_000 and row["clockRate"] == 1_530_000_000
    assert (row["name"], row["cuDevice"], row["smCount"], row["computeMajor"]) == ("Tesla V100", 0, 80, 7)
    assert row["uuid"] == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"


def test_unknown_kinds_are_counted():
    """Kinds nodecast does not write (markers, overhead...) give no row and are counted."""
    c = conv()
    assert c.convert({"kind": 17}) is None and c.convert({"kind": 17}) is None
    assert c.skipped == {17: 2}


@pytest.mark.parametrize(("demangled", "short"), [
    ("vecAdd(double*, double*, double*, int)", "vecAdd"),
    ("void ns::gemm<float, 128>(float const*, float*)", "gemm"),
    ("void at::native::(anonymous namespace)::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", "reduce_kernel"),
    ("nc_peak", "nc_peak"),
    ("void cutlass::Kernel<cutlass::gemm::Gemm<(int)128>>(cutlass::gemm::Params)", "Kernel"),
])
def test_short_names(demangled, short):
    """The base name without return type, namespaces, template arguments or parameters."""
    assert A.short_name(demangled) == short


def test_kind_numbers_match_cupti():
    """The record kinds, UM counter kinds and enum numbering used here are cupti-python's (where it is installed)."""
    cupti = pytest.importorskip("cupti.cupti", reason="cupti-python is not installed here")
    K = cupti.ActivityKind
    assert (A.KIND_MEMCPY, A.KIND_MEMSET, A.KIND_KERNEL, A.KIND_DRIVER, A.KIND_RUNTIME, A.KIND_DEVICE, A.KIND_CONTEXT,
            A.KIND_CONCURRENT_KERNEL, A.KIND_MEMCPY2, A.KIND_UNIFIED_MEMORY_COUNTER, A.KIND_SYNCHRONIZATION) == (
        K.MEMCPY, K.MEMSET, K.KERNEL, K.DRIVER, K.RUNTIME, K.DEVICE, K.CONTEXT, K.CONCURRENT_KERNEL, K.MEMCPY2,
        K.UNIFIED_MEMORY_COUNTER, K.SYNCHRONIZATION)
    U = cupti.ActivityUnifiedMemoryCounterKind
    assert (A.UM_BYTES_HTOD, A.UM_BYTES_DTOH, A.UM_BYTES_DTOD) == (U.BYTES_TRANSFER_HTOD, U.BYTES_TRANSFER_DTOH,
                                                                    U.BYTES_TRANSFER_DTOD)
    M = cupti.ActivityMemoryKind
    assert [A.nsys_mem_kind(int(M[n])) for n in ("PAGEABLE", "PINNED", "DEVICE", "MANAGED", "UNKNOWN")] == [0, 1, 2, 4, 7]


def test_fields_read_exist_in_cupti_records():
    """Every record field the converter reads is an attribute of cupti-python's record classes (where it is installed)."""
    import re
    from pathlib import Path

    cupti = pytest.importorskip("cupti.cupti", reason="cupti-python is not installed here")
    fields = set(re.findall(r'g\("(\w+)"', Path(A.__file__).read_text())) - {"flags"}  # "flags": old name of flags_
    names = ("ActivityKernel9", "ActivityMemcpy6", "ActivityMemcpyPtoP4", "ActivityMemset4", "ActivitySynchronization2",
             "ActivityAPI", "ActivityUnifiedMemoryCounter3", "ActivityDevice5", "ActivityContext3")
    known = set().union(*(dir(getattr(cupti, n)) for n in names))
    assert sorted(fields - known) == []
