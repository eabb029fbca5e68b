"""Kineto (PyTorch profiler) JSON reader: every real trace against JSON counts, exact ns, copies, API times."""

from __future__ import annotations

import functools
import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.traces._common import parse_memcpy_name
from nodecast.traces.kineto import kineto_from_document, read_kineto
from nodecast.traces.kineto_json import us_text_to_ns
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import MISSING_NS

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
KINETO = sorted(TRACES.glob("kineto_*.json.gz"))

# The test's own reading of Kineto copy names.
@functools.cache
def trace_of(path: Path):  # noqa: ANN201
    """The reader's Trace of a file, read once per file (tests only look at it)."""
    return read_kineto(path)


EXPECTED_DIRECTION = {"HtoD": CopyKind.HTOD, "DtoH": CopyKind.DTOH, "DtoD": CopyKind.DTOD, "HtoH": CopyKind.HTOH,
                      "PtoP": CopyKind.PEER}


@functools.cache
def events(path: Path) -> list[dict]:
    """Complete events of a Kineto file, numbers parsed exactly (Decimal); parsed once per file."""
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    return [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_counts_match_json(path):
    """Kernels, memsets, syncs and copies per direction (count and bytes) equal counts over the JSON events."""
    evs = events(path)
    trace = trace_of(path)
    kind = trace["kind"]
    for cat, op in (("kernel", OpKind.KERNEL), ("gpu_memset", OpKind.MEMSET), ("cuda_sync", OpKind.SYNC)):
        assert np.sum(kind == op) == sum(e["cat"] == cat for e in evs), cat
    expected: dict[CopyKind, list[int]] = {}
    for e in evs:
        if e["cat"] == "gpu_memcpy":
            direction = EXPECTED_DIRECTION[re.match(r"Memcpy (\w+)", e["name"]).group(1)]
            entry = expected.setdefault(direction, [0, 0])
            entry[0] += 1
            entry[1] += int(e["args"]["bytes"])
    copies = kind == OpKind.MEMCPY
    got = {CopyKind(k): [int(np.sum(copies & (trace["copy_kind"] == k))),
                         int(trace["bytes"][copies & (trace["copy_kind"] == k)].sum())]
           for k in np.unique(trace["copy_kind"][copies])}
    assert got == expected


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_gpu_times_exact_to_the_nanosecond(path):
    """Every GPU op's start and end are ts*1000 and (ts+dur)*1000 computed exactly from the JSON text."""
    evs = [e for e in events(path) if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")]
    starts = sorted(int(Decimal(e["ts"]) * 1000) for e in evs)
    ends = sorted(int((Decimal(e["ts"]) + Decimal(e["dur"])) * 1000) for e in evs)
    trace = trace_of(path)
    assert sorted(trace["start_ns"].tolist()) == starts
    assert sorted(trace["end_ns"].tolist()) == ends


def test_ns_resolution_trace_keeps_its_nanoseconds(shared_traces):
    """The V100 trace writes ts with ns decimals at 1.7e15 us, beyond float64: they survive exactly."""
    path = shared_traces / "kineto_training-rank0_v100.json.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    raw = re.search(r'"cat": "kernel".*?"ts": (\d+\.\d{3})', text, re.S).group(1)
    assert float(raw) * 1000 != int(raw.replace(".", ""))  # float64 cannot hold it
    trace = trace_of(path)
    assert int(raw.replace(".", "")) in set(trace["start_ns"].tolist())


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_api_times_by_correlation(path):
    """GPU ops get the ts/dur of the cuda_runtime/cuda_driver event with the same correlation, else MISSING."""
    evs = events(path)
    api = {}
    for e in evs:
        if e["cat"] in ("cuda_runtime", "cuda_driver"):
            api.setdefault(int(e["args"]["correlation"]), int(Decimal(e["ts"]) * 1000))
    gpu = [e for e in evs if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")]
    matched = sum(int(e["args"].get("correlation", -1)) in api for e in gpu)
    trace = trace_of(path)
    has_api = trace["api_start_ns"] != MISSING_NS
    assert has_api.sum() == matched
    for i in np.flatnonzero(has_api)[:50]:
        assert trace["api_start_ns"][i] == api[int(trace["correlation"][i])]


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_gpus_and_kernel_names(path):
    """GPU names come from deviceProperties for every op device; kernels keep their full names."""
    trace = trace_of(path)
    assert set(np.unique(trace["device"]).tolist()) <= set(trace.meta.gpus)
    kernels = trace["kind"] == OpKind.KERNEL
    expected = {e["name"] for e in events(path) if e["cat"] == "kernel"}
    assert set(trace.kernel_names()[kernels]) == expected


def test_copy_memory_kinds(shared_traces):
    """Pinned and pageable host copies and memset targets are decoded from the event names."""
    trace = read_kineto(shared_traces / "kineto_training-rank0_a100-80gb.json.gz")
    htod = trace["copy_kind"] == CopyKind.HTOD
    assert set(np.unique(trace["src_mem"][htod]).tolist()) == {MemKind.PAGEABLE, MemKind.PINNED}
    dtoh = trace["copy_kind"] == CopyKind.DTOH
    assert np.all(trace["dst_mem"][dtoh] == MemKind.PAGEABLE)
    memsets = trace["kind"] == OpKind.MEMSET
    assert set(np.unique(trace["dst_mem"][memsets]).tolist()) == {MemKind.DEVICE, MemKind.UNKNOWN}


def test_amd_trace_loads(shared_traces):
    """The MI300X (HIP) trace loads: 155 kernels on device 2, named after the one listed GPU, with a note."""
    trace = read_kineto(shared_traces / "kineto_nsfw-image-detection_mi300x.json.gz")
    assert trace.counts() == {"kernel": 155}
    assert trace.meta.gpus == {2: "AMD Instinct MI300X VF"}
    assert any("device 2" in n for n in trace.meta.notes)
    assert "roctracer" in trace.meta.profiler


def test_peer_copy_devices_from_args():
    """A PtoP copy takes its source and destination devices from fromDevice/toDevice."""
    doc = {"traceEvents": [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "pid": 1,
                            "tid": 7, "ts": 10, "dur": 2, "args": {"fromDevice": 1, "inDevice": 1, "toDevice": 3,
                                                                   "stream": 7, "correlation": 5, "bytes": 64}}]}
    trace = kineto_from_document(doc)
    assert trace["copy_kind"][0] == CopyKind.PEER
    assert (trace["device"][0], trace["src_device"][0], trace["dst_device"][0]) == (1, 1, 3)
    assert (trace["start_ns"][0], trace["end_ns"][0]) == (10_000, 12_000)


def test_bare_event_list_and_missing_args():
    """A bare Chrome event list loads; device and stream fall back to pid and tid."""
    trace = kineto_from_document([{"ph": "X", "cat": "kernel", "name": "k", "pid": 3, "tid": 9, "ts": 1, "dur": 1}])
    assert (trace["device"][0], trace["stream"][0], trace.kernel_names()[0]) == (3, 9, "k")


def test_not_a_chrome_trace():
    """JSON without traceEvents is refused with an InputError."""
    with pytest.raises(InputError, match="traceEvents"):
        kineto_from_document({"hello": 1})


@pytest.mark.parametrize(
    ("text", "ns"),
    [("1712195495505582.988", 1712195495505582988), ("3", 3000), ("-0.5", -500), ("0.0004", 0), ("0.0005", 1),
     ("1e-3", 1), ("2.5E1", 25000)],
)
def test_us_text_to_ns(text, ns):
    """Microsecond text converts to integer ns exactly (a 4th decimal rounds half up, exponents work)."""
    assert us_text_to_ns([text]).tolist() == [ns]


def test_us_text_to_ns_rejects_garbage():
    """A non-numeric timestamp is a ValueError (the reader turns it into an InputError)."""
    with pytest.raises(ValueError, match="not a number"):
        us_text_to_ns(["12", "abc"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Memcpy HtoD (Pageable -> Device)", (CopyKind.HTOD, MemKind.PAGEABLE, MemKind.DEVICE)),
        ("Memcpy DtoH (Device -> Pinned)", (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED)),
        ("Memcpy AtoH (Array -> Pageable)", (CopyKind.DTOH, MemKind.ARRAY, MemKind.PAGEABLE)),
        ("Memcpy HtoA (Pinned -> Unknown)", (CopyKind.HTOD, MemKind.PINNED, MemKind.ARRAY)),
        ("Memcpy DtoD (Device Static -> Managed Static)", (CopyKind.DTOD, MemKind.DEVICE_STATIC, MemKind.MANAGED_STATIC)),
        ("Memcpy Weird", (CopyKind.UNKNOWN, MemKind.UNKNOWN, MemKind.UNKNOWN)),
        ("something else", (CopyKind.UNKNOWN, MemKind.UNKNOWN, MemKind.UNKNOWN)),
    ],
)
def test_parse_memcpy_name(name, expected):
    """Copy names decode into direction and memory kinds; array copies keep ARRAY on the array side."""
    assert parse_memcpy_name(name) == expected


# -- bad values: one InputError naming the field, never a traceback or a silent default ---------------------


def _copy_event(args: dict | None = None, **changes: object) -> dict:
    """A Kineto memcpy event as PyTorch writes it, with ``changes`` and ``args`` changes applied (None deletes a key)."""
    event = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
             "ts": 1000, "dur": 12, "args": {"device": 0, "stream": 7, "correlation": 14, "bytes": 92928}}
    for target, edits in ((event, changes), (event["args"], args or {})):
        for key, value in edits.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    return event


def _write(tmp_path: Path, events: list[dict], text: str | None = None) -> Path:
    """A Kineto JSON file holding ``events`` (or the raw ``text``)."""
    path = tmp_path / "trace.json"
    path.write_text(text if text is not None else json.dumps({"traceEvents": events}))
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"bytes": 10**40}, rf"args\.bytes: out of range .* in 1 of 2 GPU events \(first: {10**40}\)"),
        ({"bytes": -100}, r"args\.bytes: negative in 1 of 2 GPU events \(first: -100\)"),
        ({"bytes": "lots"}, r"args\.bytes: not a number in 1 of 2 GPU events \(first: 'lots'\)"),
        ({"device": 70000}, r"args\.device \(or pid\): out of range \(nodecast keeps it in -32768\.\.32767\)"),
        ({"correlation": 10**40}, r"args\.correlation: out of range"),
        ({"grid": [10**40, 1, 1]}, r"args\.grid: out of range"),
    ],
)
def test_bad_integer_fields_are_refused(tmp_path, args, message):
    """A byte count that is huge, negative or text, or any integer too large for its column, is one InputError
    (it was an OverflowError traceback, or a copy of 0 B)."""
    path = _write(tmp_path, [_copy_event(), _copy_event(ts=2000, args=args)])
    with pytest.raises(InputError, match=message):
        read_kineto(path)


def test_absent_fields_keep_their_defaults():
    """The documented fallbacks stay: no args -> device/stream from pid/tid; a text device falls back too."""
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5000, "dur": 1}
    trace = kineto_from_document([_copy_event(args={"device": "gpu"}), kernel])
    assert trace["bytes"].tolist() == [92928, 0]
    assert trace["device"].tolist() == [0, 0] and trace["stream"].tolist() == [7, 7]


@pytest.mark.parametrize("cat", ["gpu_memcpy", "gpu_memset"])
def test_copy_without_bytes_is_refused(tmp_path, cat):
    """A memcpy or memset without args.bytes (or without args) is refused: it was read as 0 B."""
    no_args = _copy_event(ts=50, cat=cat)
    del no_args["args"]
    path = _write(tmp_path, [_copy_event(), _copy_event(cat=cat, args={"bytes": None}), no_args])
    with pytest.raises(InputError, match=rf"args\.bytes: missing in 2 of 3 memcpy/memset events \(first: {cat}"):
        read_kineto(path)


def test_args_not_an_object_is_refused(tmp_path):
    """A GPU event whose args is text is refused (it was read as no args: a copy of 0 B)."""
    path = _write(tmp_path, [_copy_event(), _copy_event(ts=2000, args=None) | {"args": "x"}])
    with pytest.raises(InputError, match=r"args: not an object in 1 of 2 GPU events \(first: gpu_memcpy .*'x'\)"):
        read_kineto(path)


@pytest.mark.parametrize(
    ("dur", "message"),
    [
        ("NaN", r"dur: not finite in 1 of 2 GPU events \(first: 'nan'\)"),
        ("Infinity", r"dur: not finite"),
        ('"abc"', r"dur: not a number in 1 of 2 GPU events \(first: 'abc'\)"),
        ("1e308", r"dur: out of range \(nodecast reads up to .* us\) in 1 of 2 GPU events \(first: '1e308'\)"),
        (str(10**30), r"dur: out of range"),
        ("-5", r"dur: negative in 1 of 2 GPU events \(first: -5 us\)"),
    ],
)
def test_bad_durations_name_the_field(tmp_path, dur, message):
    """A dur that is NaN, infinite, text, huge or negative is an InputError naming dur and what is wrong
    (it read 'a timestamp is not a number', or a transfer time of -5 us)."""
    text = json.dumps({"traceEvents": [_copy_event(), _copy_event(ts=2000, dur="@@")]}).replace('"@@"', dur)
    with pytest.raises(InputError, match=message):
        read_kineto(_write(tmp_path, [], text))


def test_bad_timestamp_names_ts(tmp_path):
    """A text ts is refused naming ts."""
    with pytest.raises(InputError, match=r"ts: not a number in 1 of 2 GPU events \(first: 'x'\)"):
        read_kineto(_write(tmp_path, [_copy_event(), _copy_event(ts="x")]))


@pytest.mark.parametrize("field", ["dur", "ts"])
def test_gpu_work_without_times_is_refused(tmp_path, field):
    """A kernel, memcpy or memset event without ts or dur is refused (it became a 0 s op)."""
    with pytest.raises(InputError, match=rf"{field}: missing in 1 of 2 GPU events \(first: gpu_memcpy"):
        read_kineto(_write(tmp_path, [_copy_event(), _copy_event(**{field: None})]))


def test_sync_without_dur_still_loads():
    """A cuda_sync event without dur keeps 0 s, as before: syncs are never projected."""
    sync = {"ph": "X", "cat": "cuda_sync", "name": "Device Synchronize", "pid": 0, "tid": 7, "ts": 30}
    trace = kineto_from_document([_copy_event(), sync])
    assert trace.counts() == {"memcpy": 1, "sync": 1}


def test_deeply_nested_json(tmp_path):
    """100,000 nested brackets are an InputError, not a RecursionError traceback."""
    with pytest.raises(InputError, match="nested too deeply"):
        read_kineto(_write(tmp_path, [], "[" * 100_000 + "]" * 100_000))


def test_empty_gzip(tmp_path):
    """A gzip file holding nothing says so, rather than 'invalid JSON at line 1'."""
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(b""))
    with pytest.raises(InputError, match="empty once decompressed"):
        read_kineto(path)


@pytest.mark.parametrize(("values", "reason"), [([10**19], "out of range"), (["nan"], "not finite"),
                                                 (["1e400"], "out of range"), ([True], "not a number")])
def test_us_text_to_ns_reasons(values, reason):
    """us_text_to_ns says why a value cannot be converted (never wraps a huge one silently)."""
    with pytest.raises(ValueError, match=reason):
        us_text_to_ns(["1", *values])


# -- ROCm copies -------------------------------------------------------------------------------
# Built in the test from Kineto's own writers (pytorch/kineto libkineto/src/RoctracerActivity_inl.h and
# RocprofActivity_inl.h): GPU copies are "Memcpy <DtoH|HtoD|DtoD|HtoH> (<Host|Device> -> <Host|Device>)" with
# args device/stream/correlation/kind/bytes; the HIP call (cat cuda_runtime) carries the same correlation
# and args.kind = the hipMemcpyKind asked for (0 HtoH, 1 HtoD, 2 DtoH, 3 DtoD, 4 Default), as text.
# roctracer-era Kineto named the GPU op after roctracer_op_string ("CopyDeviceToHost"...).
def _rocm_doc(copies):
    """A ROCm Kineto document with one GPU copy and its HIP call per (gpu name, gpu kind, api name, api kind, bytes)."""
    events = []
    for i, (name, gpu_kind, api_name, api_kind, nbytes) in enumerate(copies):
        corr = 100 + i
        events.append({"ph": "X", "cat": "cuda_runtime", "name": api_name, "pid": 1, "tid": 1, "ts": 10 * i,
                       "dur": 1, "args": {"cid": 40, "correlation": corr, "src": "0x7f00", "dst": "0x7f80",
                                          "bytes": str(nbytes), "kind": str(api_kind)}})
        events.append({"ph": "X", "cat": "gpu_memcpy", "name": name, "pid": 2, "tid": 0, "ts": 10 * i + 2,
                       "dur": "2.240", "args": {"device": 2, "stream": 0, "correlation": corr, "kind": gpu_kind,
                                                "bytes": nbytes}})
    return {"traceEvents": events, "roctracer_version": 4.1, "hip_runtime_version": 60443483,
            "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X VF"}]}


def test_rocm_host_copies_labelled_dtod_take_the_direction_of_their_hip_call():
    """A 1-byte DtoH copy that ROCm's tracer labels DtoD (ROCm/roctracer#45) is read as DtoH, host memory unknown."""
    doc = _rocm_doc([("Memcpy DtoD (Device -> Device)", "DtoD", "hipMemcpyWithStream", 2, 1),
                     ("Memcpy DtoD (Device -> Device)", "DtoD", "hipMemcpyAsync", 1, 4),
                     ("Memcpy DtoD (Device -> Device)", "DtoD", "hipMemcpyAsync", 3, 64),
                     ("Memcpy DtoD (Device -> Device)", "DtoD", "hipMemcpyAsync", 4, 64)])
    trace = kineto_from_document(doc, source="rocm.json")
    assert trace["copy_kind"].tolist() == [CopyKind.DTOH, CopyKind.HTOD, CopyKind.DTOD, CopyKind.DTOD]
    assert trace["src_mem"].tolist() == [MemKind.DEVICE, MemKind.UNKNOWN, MemKind.DEVICE, MemKind.DEVICE]
    assert trace["dst_mem"].tolist() == [MemKind.UNKNOWN, MemKind.DEVICE, MemKind.DEVICE, MemKind.DEVICE]
    notes = " ".join(trace.meta.notes)
    assert "2 copies labelled DtoD by the ROCm tracer are host copies by their HIP call" in notes
    assert "pinned or pageable" in notes


@pytest.mark.parametrize(("name", "gpu_kind", "expected"), [
    ("Memcpy DtoH (Device -> Host)", "DtoH", (CopyKind.DTOH, MemKind.DEVICE, MemKind.UNKNOWN)),
    ("Memcpy HtoD (Host -> Device)", "HtoD", (CopyKind.HTOD, MemKind.UNKNOWN, MemKind.DEVICE)),
    ("CopyDeviceToHost", "", (CopyKind.DTOH, MemKind.DEVICE, MemKind.UNKNOWN)),
    ("CopyHostToDevice2D", "", (CopyKind.HTOD, MemKind.UNKNOWN, MemKind.DEVICE)),
    ("CopyDeviceToDevice", "", (CopyKind.DTOD, MemKind.DEVICE, MemKind.DEVICE)),
    ("Memcpy", "DtoH", (CopyKind.DTOH, MemKind.DEVICE, MemKind.UNKNOWN)),
])
def test_rocm_copy_labels(name, gpu_kind, expected):
    """Every ROCm copy label Kineto writes gives the direction, the device side, and an unknown host side."""
    trace = kineto_from_document(_rocm_doc([(name, gpu_kind, "hipMemcpyAsync", 4, 8)]))
    assert (trace["copy_kind"][0], trace["src_mem"][0], trace["dst_mem"][0]) == expected


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_occupancy_args_of_kernels(path):
    """Kernels keep args 'registers per thread' and 'shared memory' (Kineto's static + dynamic sum, kept as
    static); traces without them (ROCm) leave the columns not recorded (-1)."""
    kernels = [e for e in events(path) if e.get("cat") == "kernel"]
    want = sorted((int(Decimal(e["ts"]) * 1000), int(e["args"].get("registers per thread", -1)),
                   int(e["args"].get("shared memory", -1))) for e in kernels)
    trace = trace_of(path)
    k = trace["kind"] == OpKind.KERNEL
    got = sorted(zip(trace["start_ns"][k].tolist(), trace["registers_per_thread"][k].tolist(),
                     trace["static_smem_bytes"][k].tolist(), strict=True))
    assert [g[1:] for g in got] == [w[1:] for w in want]
    assert (trace["dynamic_smem_bytes"] == -1).all() and (trace["local_mem_per_thread_bytes"] == -1).all()
