"""PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip -> Trace.

GPU work is the complete (``ph: "X"``) events of category ``kernel``,
``gpu_memcpy``, ``gpu_memset`` and ``cuda_sync`` (kind SYNC). CPU API start/end
come from ``cuda_runtime`` / ``cuda_driver`` events with the same
``args.correlation``. AMD traces (roctracer) use the same categories for HIP
work and load the same way.

Timestamps: Kineto writes ``ts``/``dur`` in microseconds, as integers or as
decimals with nanosecond digits (``1712195495505583.047``). A float64 cannot
hold such a value to the nanosecond (its spacing near 1.7e15 is 0.25 us), so
the JSON is parsed with numbers kept as text and converted to integer ns
exactly (``kineto_json``). Copy direction and memory kinds come from the
event name (``Memcpy HtoD (Pageable -> Device)``), bytes/device/stream from
``args`` (falling back to ``pid``/``tid``), GPU names from ``deviceProperties``.
Kernels keep ``args.grid``/``args.block`` and, on CUDA, ``args."registers per
thread"`` and ``args."shared memory"``; Kineto prints the static and dynamic
shared memory of a launch as one sum (libkineto ``CuptiActivity.cpp``,
``staticSharedMemory + dynamicSharedMemory``), kept in ``static_smem_bytes``
with ``dynamic_smem_bytes`` not recorded. ROCm traces give neither, and their
``args.grid`` counts work-items for some launches (MIOpen's) and blocks for
others (PyTorch's): it is kept as written.

ROCm traces label copies their own ways, and never say whether host memory
was pinned or pageable; ``kineto_copies`` decodes both (and corrects the ROCm
tracer's mislabelled host copies from their HIP calls, with a note).

What a kernel computes comes from the aten op that launched it (the
innermost ``cpu_op`` around its launch call, ``kineto_ops``): its op class
(``aten::addmm`` -> GEMM), and, where the trace was recorded with
``record_shapes=True``, its dtype, shape, FLOP and bytes from the op's
``Input Dims``/``Input type``/``Concrete Inputs`` (``aten_work``), filling
the Trace's work columns. An op that launched several kernels gives each its
class and dtype only. Without ``cpu_op`` events they keep their defaults.
What an NCCL kernel communicated comes from the collective records around its
launch (``record_param_comms``, ``nccl:*``, ``c10d::*``; ``kineto_comms``):
its collective, dtype, message size and group.

Bad values: a kernel, memcpy or memset event without ``ts`` or ``dur``, a
``ts``/``dur`` that is not a finite number of microseconds (or beyond 2^62 ns),
a negative ``dur``, an ``args.bytes`` that is not a non-negative integer, or an
integer field too large for its column is an InputError naming the field and
counting the events; so is an ``args`` that is not an object, and a memcpy or
memset without ``args.bytes`` (it would be a copy of 0 B). Other absent
``args`` fields keep their defaults (device from ``pid``...), and a device or
stream written as text falls back the same way, as before.

Host records (``ApiCalls``) are read by ``kineto_api``; ``READER`` gives both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nodecast.errors import InputError
from nodecast.machines.device_properties import GpuProperties, nvidia_properties
from nodecast.traces import _common
from nodecast.traces.aten_work import aten_works
from nodecast.traces.kineto_api import read_kineto_api
from nodecast.traces.kineto_comms import comm_work, is_comm_record, nccl_rows
from nodecast.traces.kineto_copies import decode_copies, is_rocm, memset_kind, rocm_copies
from nodecast.traces.kineto_json import int_column, int_field, lenient_ns, load_json, ns_or_error
from nodecast.traces.kineto_ops import first_match, launching_ops
from nodecast.traces.kinds import MemKind, OpKind
from nodecast.traces.reader import GZIP, JSON, Reader
from nodecast.traces.trace import NOT_RECORDED, Trace, TraceMeta, default_column

FORMAT = "kineto-json"

_GPU_CATS = {
    "kernel": OpKind.KERNEL,
    "gpu_memcpy": OpKind.MEMCPY,
    "gpu_memset": OpKind.MEMSET,
    "cuda_sync": OpKind.SYNC,
}
_API_CATS = ("cuda_runtime", "cuda_driver")  # runtime first: it wins on a shared correlation id


def read_kineto(path: str | Path) -> Trace:
    """Read a Kineto trace (``.json`` or ``.json.gz``) into a Trace (may hold zero ops)."""
    path = Path(path)
    return kineto_from_document(load_json(path), source=str(path))


#: The format's reader (``traces.formats``): any JSON or gzip file (a JSON that is no Kineto trace is refused by
#: the reader in its own words).
READER = Reader("kineto", lambda probe: probe.container in (GZIP, JSON), read_kineto, read_kineto_api)


def kineto_from_document(doc: Any, source: str = "") -> Trace:
    """Build a Trace from a parsed Kineto document (``{"traceEvents": [...]}`` or a bare event list)."""
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
    elif isinstance(doc, list):
        events, doc = doc, {}
    else:
        raise InputError("JSON without a traceEvents list: not a Chrome/Kineto trace", path=source or None)

    gpu: list[dict[str, Any]] = []
    api: dict[str, list[dict[str, Any]]] = {c: [] for c in _API_CATS}
    aten: list[dict[str, Any]] = []
    comms: list[dict[str, Any]] = []
    for e in events:
        if type(e) is not dict or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat in _GPU_CATS:
            gpu.append(e)
        elif cat in api:
            api[cat].append(e)
        elif cat == "cpu_op":
            aten.append(e)
        if is_comm_record(cat, e.get("name")):
            comms.append(e)

    n = len(gpu)
    cols = _common.allocate(n)
    cols["kind"][:] = [_GPU_CATS[e["cat"]] for e in gpu]
    args = _gpu_args(gpu, cols["kind"], source)
    start = _gpu_times(gpu, cols["kind"], "ts", source)
    dur = _gpu_times(gpu, cols["kind"], "dur", source)
    negative = dur < 0
    if negative.any():
        i = int(np.argmax(negative))
        raise InputError(
            f"negative in {int(np.count_nonzero(negative)):,} of {n:,} GPU events (first: {gpu[i].get('dur')} us)",
            path=source or None,
            key="dur",
            hint="The trace is damaged or was edited; save it again from the profiler",
        )
    cols["start_ns"][:] = start
    cols["end_ns"][:] = start + dur  # both within +-2^62 ns: no overflow
    del start, dur, negative

    def fill(col: str, raw: list[Any], default: int, field: str, **kw: Any) -> None:
        int_column(raw, cols[col], default, field, source, **kw)

    fill("device", [a.get("device", a.get("inDevice", e.get("pid"))) for a, e in zip(args, gpu, strict=True)], 0,
         "args.device (or pid)")
    fill("stream", [a.get("stream", e.get("tid")) for a, e in zip(args, gpu, strict=True)], -1, "args.stream (or tid)")
    fill("correlation", [a.get("correlation") for a in args], -1, "args.correlation")
    # A byte count that is text, negative or huge would silently become 0 B (or wrap): refuse it.
    fill("bytes", [a.get("bytes") for a in args], 0, "args.bytes", strict=True, minimum=0)
    fill("src_device", [a.get("fromDevice") for a in args], -1, "args.fromDevice")
    fill("dst_device", [a.get("toDevice") for a in args], -1, "args.toDevice")
    for key, names in (("grid", ("grid_x", "grid_y", "grid_z")), ("block", ("block_x", "block_y", "block_z"))):
        dims = [a.get(key) for a in args]
        for axis, col in enumerate(names):
            fill(col, [d[axis] if type(d) is list and len(d) == 3 else 0 for d in dims], 0, f"args.{key}")
    # Kineto writes one shared-memory figure, static + dynamic (libkineto CuptiActivity.cpp metadataJson):
    # it is kept as the static column so that occupancy sees the whole; the split stays unknown.
    for key, col in (("registers per thread", "registers_per_thread"), ("shared memory", "static_smem_bytes")):
        fill(col, [a.get(key) for a in args], NOT_RECORDED, f"args.{key}")
        cols[col][cols[col] < 0] = NOT_RECORDED

    kinds = cols["kind"]
    notes: list[str] = []
    copies = np.flatnonzero(kinds == OpKind.MEMCPY)
    decode_copies(gpu, args, cols, copies)
    if copies.size and is_rocm(doc, api):
        rocm_copies(api, cols, copies, notes)
    memsets = np.flatnonzero(kinds == OpKind.MEMSET)
    labels: dict[str, MemKind] = {}
    cols["dst_mem"][memsets] = [memset_kind(str(gpu[i].get("name", "")), labels) for i in memsets]

    is_kernel = kinds == OpKind.KERNEL
    name_ids, names = _common.intern_strings(
        [str(e.get("name", "")) if k else None for e, k in zip(gpu, is_kernel, strict=True)]
    )
    cols["name_id"][:] = name_ids

    calls, call_corr, call_start = _join_api(api, cols, source)
    _op_work(args, cols, calls, call_corr, call_start, aten)
    nccl = nccl_rows(cols, names) if comms else np.zeros(0, np.int64)
    if len(nccl):
        comm_work(_linker(nccl, args, cols, calls, call_corr, call_start), nccl, cols, names, comms, doc, notes)
    if "baseTimeNanoseconds" in doc:
        notes.append(f"timestamps kept as written, relative to baseTimeNanoseconds={doc['baseTimeNanoseconds']}")
    gpus = _gpus(doc, cols["device"], notes)
    meta = TraceMeta(source=source, format=FORMAT, profiler=_profiler(doc), gpus=gpus, notes=notes,
                     gpu_properties=_gpu_properties(doc, gpus))
    return _common.finish(cols, names, meta)


def _gpu_args(gpu: list[dict[str, Any]], kinds: np.ndarray, source: str) -> list[dict[str, Any]]:
    """``args`` of every GPU event ({} when absent), checked.

    An ``args`` that is not an object, or a memcpy/memset without
    ``args.bytes``, is an InputError counting the events: either would read
    as a copy of 0 B (and default device/stream) without a word.
    """
    raw = [e.get("args") for e in gpu]
    odd = np.fromiter((a is not None and type(a) is not dict for a in raw), dtype=bool, count=len(raw))
    if odd.any():
        i = int(np.argmax(odd))
        raise InputError(
            f"not an object in {int(np.count_nonzero(odd)):,} of {len(raw):,} GPU events "
            f"(first: {gpu[i].get('cat')} {str(gpu[i].get('name', ''))[:60]!r}, args {raw[i]!r:.40})",
            path=source or None,
            key="args",
            hint="The trace is damaged or was edited; save it again from the profiler",
        )
    args = [{} if a is None else a for a in raw]
    moves = (kinds == OpKind.MEMCPY) | (kinds == OpKind.MEMSET)
    no_bytes = moves & np.fromiter((a.get("bytes") is None for a in args), dtype=bool, count=len(args))
    if no_bytes.any():
        i = int(np.argmax(no_bytes))
        raise InputError(
            f"missing in {int(np.count_nonzero(no_bytes)):,} of {int(np.count_nonzero(moves)):,} memcpy/memset "
            f"events (first: {gpu[i].get('cat')} {str(gpu[i].get('name', ''))[:60]!r})",
            path=source or None,
            key="args.bytes",
            hint="Without it the copy would count as 0 B; save the trace again from the profiler",
        )
    return args


def _gpu_times(gpu: list[dict[str, Any]], kinds: np.ndarray, field: str, source: str) -> np.ndarray:
    """``ts`` or ``dur`` of every GPU event in ns.

    Kernels, copies and memsets must have the field: without it they would
    read as starting at 0 or lasting 0 s. A sync event without it keeps 0 as
    before (syncs are the host waiting, never projected).
    """
    raw = [e.get(field) for e in gpu]
    absent = np.fromiter((v is None for v in raw), dtype=bool, count=len(raw))
    if absent.any():
        work = absent & (kinds != OpKind.SYNC)
        if work.any():
            i = int(np.argmax(work))
            raise InputError(
                f"missing in {int(np.count_nonzero(work)):,} of {len(raw):,} GPU events "
                f"(first: {gpu[i].get('cat')} {str(gpu[i].get('name', ''))[:60]!r})",
                path=source or None,
                key=field,
                hint="Kernel, memcpy and memset events need ts and dur; save the trace again from the profiler",
            )
        raw = [0 if v is None else v for v in raw]
    return ns_or_error(raw, field, source, "GPU events")


def _join_api(api: dict[str, list[dict[str, Any]]], cols: dict[str, np.ndarray], source: str
              ) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray]:
    """CPU API start/end per op from the runtime/driver events with the same correlation.

    Returns the calls (runtime first), their correlation ids and starts (ns), for ``_op_work``.
    """
    calls = [e for cat in _API_CATS for e in api[cat]]
    what = "cuda_runtime/cuda_driver events"
    corr = np.empty(len(calls), dtype=np.int64)
    raw_corr = [a.get("correlation") if type(a := e.get("args")) is dict else None for e in calls]
    int_column(raw_corr, corr, -1, "args.correlation", source, events=what)
    # Absent API times read 0, as before: they only fill api_start_ns/api_end_ns.
    start = ns_or_error([e.get("ts", 0) for e in calls], "ts", source, what)
    end = start + ns_or_error([e.get("dur", 0) for e in calls], "dur", source, what)
    _common.join_api_times(cols["correlation"], corr, start, end, cols["api_start_ns"], cols["api_end_ns"])
    return calls, corr, start


def _op_work(args: list[dict[str, Any]], cols: dict[str, np.ndarray], calls: list[dict[str, Any]],
             call_corr: np.ndarray, call_start: np.ndarray, aten: list[dict[str, Any]]) -> None:
    """Op class, dtype, shape, FLOP and bytes of every kernel from the aten op that launched it.

    The op is found by ``kineto_ops.launching_ops``; what it computes by
    ``aten_work`` (its name, and its shapes where the trace was recorded with
    ``record_shapes``). An op that launched several kernels gives each its
    class and dtype but no FLOP, bytes or shape: how its work splits among
    them is unknown. A column no kernel gets a value for keeps its shared
    default. aten ops whose ``ts``/``dur`` are absent or no number are
    skipped: they were never read before, and must not stop a trace loading.
    """
    kernels = np.flatnonzero(cols["kind"] == OpKind.KERNEL)
    if not len(kernels) or not aten:
        return
    link = _linker(kernels, args, cols, calls, call_corr, call_start)(aten)
    aten_args = [e.get("args") for e in aten]
    linked = link >= 0
    if not linked.any():
        return
    used, which = np.unique(link[linked], return_inverse=True)
    alone = np.bincount(which)[which] == 1  # the op launched this kernel only
    works = aten_works([aten[i].get("name") for i in used.tolist()], [aten_args[i] for i in used.tolist()])
    rows = kernels[linked]
    n = len(cols["kind"])
    for col, alone_only in (("op_class", False), ("dtype", False), ("flops", True), ("work_bytes", True),
                            ("batch", True), ("m", True), ("n", True), ("k", True)):
        default = default_column(col, 1)[0]
        per_op = np.array([default if w is None else getattr(w, col) for w in works], dtype=cols[col].dtype)
        values = per_op[which]
        if alone_only:
            values = np.where(alone, values, default)
        keep = ~np.isnan(values) if values.dtype.kind == "f" else values != default
        if keep.any():
            column = np.full(n, default, dtype=cols[col].dtype)
            column[rows] = values
            cols[col] = column


def _linker(kernels: np.ndarray, args: list[dict[str, Any]], cols: dict[str, np.ndarray], calls: list[dict[str, Any]],
            call_corr: np.ndarray, call_start: np.ndarray) -> Callable[[list[dict[str, Any]]], np.ndarray]:
    """A function of CPU op events giving, per kernel row of ``kernels``, the index of the event that launched it
    (-1: none; ``kineto_ops.launching_ops``). Events whose ``ts``/``dur`` are absent or no number are skipped:
    they were never read before, and must not stop a trace loading."""
    threads: dict[object, int] = {}
    call = first_match(call_corr, cols["correlation"][kernels])
    launched = call >= 0
    launch_thread = np.full(len(kernels), -1, dtype=np.int64)
    launch_thread[launched] = _thread_ids([calls[i] for i in call[launched]], threads)
    launch_start = np.where(launched, call_start[np.maximum(call, 0)] if len(call_start) else 0, 0)
    kernel_ext, kernel_start = _external_ids([args[i] for i in kernels]), cols["start_ns"][kernels]

    def link(ops: list[dict[str, Any]]) -> np.ndarray:
        start, ok = lenient_ns([e.get("ts") for e in ops])
        dur, ok_dur = lenient_ns([e.get("dur") for e in ops])
        ok &= ok_dur & (dur >= 0)
        kept = np.flatnonzero(ok)
        found = launching_ops(kernel_ext, kernel_start, launch_start, launch_thread, start[kept],
                              start[kept] + dur[kept], _thread_ids([ops[i] for i in kept], threads),
                              _external_ids([ops[i].get("args") for i in kept]))
        return np.where(found >= 0, kept[np.maximum(found, 0)], -1) if len(kept) else found

    return link


def _external_ids(args: list[Any]) -> np.ndarray:
    """``args["External id"]`` of each event as int64 (-1: absent, not an integer, or args not an object)."""
    ids = [a.get("External id", -1) if type(a) is dict else -1 for a in args]
    try:
        return np.fromiter(ids, dtype=np.int64, count=len(ids))  # the profiler writes plain integers
    except (TypeError, ValueError, OverflowError):
        ids = [int_field(i, -1) for i in ids]
        return np.fromiter((i if type(i) is int and -1 <= i < (1 << 62) else -1 for i in ids), dtype=np.int64,
                           count=len(ids))


def _thread_ids(events: list[dict[str, Any]], index: dict[object, int]) -> np.ndarray:
    """A dense id per (pid, tid) of each event, shared through ``index`` by the calls and the aten ops."""
    try:
        return np.fromiter((index.setdefault((e.get("pid"), e.get("tid")), len(index)) for e in events),
                           dtype=np.int64, count=len(events))
    except TypeError:  # a pid or tid that is a list or an object (a damaged file): its text stands for it
        return np.fromiter((index.setdefault(repr((e.get("pid"), e.get("tid"))), len(index)) for e in events),
                           dtype=np.int64, count=len(events))


def _profiler(doc: dict[str, Any]) -> str:
    """Profiler description from the document's version fields."""
    parts = ["PyTorch profiler (Kineto)"]
    for key, label in (("cupti_version", "CUPTI"), ("roctracer_version", "roctracer"), ("schemaVersion", "schema")):
        if key in doc:
            parts.append(f"{label} {doc[key]}")
    return ", ".join(parts)


def _gpu_properties(doc: dict[str, Any], gpus: dict[int, str]) -> dict[int, GpuProperties]:
    """Compute capability, SM count and memory per device id from ``deviceProperties`` (``computeMajor``,
    ``computeMinor``, ``numSms``, ``totalGlobalMem``), under the ids ``_gpus`` settled on (one listed GPU taken
    to be the op device keeps its properties). AMD entries carry no NVIDIA compute capability: their target is
    left unknown."""
    listed: dict[int, GpuProperties] = {}
    for p in doc.get("deviceProperties") or []:
        if isinstance(p, dict) and "name" in p:
            props = nvidia_properties(p.get("computeMajor"), p.get("computeMinor"), p.get("numSms"),
                                      p.get("totalGlobalMem"))
            if str(p["name"]).startswith("AMD"):
                props = GpuProperties(sms=props.sms, memory_bytes=props.memory_bytes)
            listed[int_field(p.get("id"), len(listed))] = props
    if len(listed) == 1 and len(gpus) == 1 and not set(listed) & set(gpus):
        listed = {next(iter(gpus)): next(iter(listed.values()))}
    return {d: p for d, p in sorted(listed.items()) if d in gpus and p.known()}


def _gpus(doc: dict[str, Any], devices: np.ndarray, notes: list[str]) -> dict[int, str]:
    """GPU name per device id from ``deviceProperties``.

    When the file lists exactly one GPU and every op runs on one device id
    that the list does not have (the MI300X sample lists id 0, its ops run on
    device 2), that GPU is taken to be the op device, with a note.
    """
    gpus: dict[int, str] = {}
    for p in doc.get("deviceProperties") or []:
        if isinstance(p, dict) and "name" in p:
            gpus[int_field(p.get("id"), len(gpus))] = str(p["name"])
    used = set(np.unique(devices).tolist()) if len(devices) else set()
    if len(gpus) == 1 and len(used) == 1 and not used & set(gpus):
        (listed, name), (dev,) = next(iter(gpus.items())), used
        notes.append(
            f"deviceProperties lists only id {listed} ({name}) but every op runs on device {dev}: taken to be that GPU"
        )
        gpus = {dev: name}
    return dict(sorted(gpus.items()))
