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
exactly (``us_text_to_ns``). Copy direction and memory kinds come from the
event name (``Memcpy HtoD (Pageable -> Device)``), bytes/device/stream from
``args`` (falling back to ``pid``/``tid``), GPU names from ``deviceProperties``.
Kernels keep ``args.grid``/``args.block`` and, on CUDA, ``args."registers per
thread"`` and ``args."shared memory"``; Kineto prints the static and dynamic
shared memory of a launch as one sum (libkineto ``CuptiActivity.cpp``,
``staticSharedMemory + dynamicSharedMemory``), kept in ``static_smem_bytes``
with ``dynamic_smem_bytes`` not recorded. ROCm traces give neither, and their
``args.grid`` counts work-items for some launches (MIOpen's) and blocks for
others (PyTorch's): it is kept as written.

ROCm traces (roctracer or rocprofiler-sdk under Kineto) label copies
``Memcpy DtoH (Device -> Host)`` (``args.kind`` ``DtoH``), or, before Kineto's
rewrite, after roctracer's op string (``CopyDeviceToHost``, ``...2D``). Their
host side never says whether the memory was pinned or pageable: it stays
``MemKind.UNKNOWN`` (never guessed), with a note. ROCm's tracer also labels a
host copy DtoD when the host buffer is device-accessible (ROCm/roctracer#45:
"reports all kinds of memcpy as CopyDeviceToDevice when using pinned
memory"), so the direction is taken from the HIP call with the same
correlation where that call names one (``args.kind``, the ``hipMemcpyKind``
asked for: 1 HtoD, 2 DtoH, 3 DtoD; or a ``hipMemcpyHtoD``/``DtoH``/``DtoD``
name), with a note counting the copies it changed.

What a kernel computes comes from the aten op that launched it (the
innermost ``cpu_op`` around its launch call, ``kineto_ops``): its op class
(``aten::addmm`` -> GEMM), and, where the trace was recorded with
``record_shapes=True``, its dtype, shape, FLOP and bytes from the op's
``Input Dims``/``Input type``/``Concrete Inputs`` (``aten_work``), filling
the Trace's work columns. An op that launched several kernels gives each its
class and dtype only. Without ``cpu_op`` events they keep their defaults.

Bad values: a kernel, memcpy or memset event without ``ts`` or ``dur``, a
``ts``/``dur`` that is not a finite number of microseconds (or beyond 2^62 ns),
a negative ``dur``, an ``args.bytes`` that is not a non-negative integer, or an
integer field too large for its column is an InputError naming the field and
counting the events; so is an ``args`` that is not an object, and a memcpy or
memset without ``args.bytes`` (it would be a copy of 0 B). Other absent
``args`` fields keep their defaults (device from ``pid``...), and a device or
stream written as text falls back the same way, as before.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from nodecast.decoding import decoder_limits
from nodecast.errors import InputError
from nodecast.inputs import inflate_gzip, read_input
from nodecast.traces import _common
from nodecast.traces.device_properties import GpuProperties, nvidia_properties
from nodecast.traces.aten_work import aten_works
from nodecast.traces.kineto_ops import first_match, launching_ops
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import NOT_RECORDED, Trace, TraceMeta, default_column

FORMAT = "kineto-json"

GZIP_MAGIC = b"\x1f\x8b"

_GPU_CATS = {
    "kernel": OpKind.KERNEL,
    "gpu_memcpy": OpKind.MEMCPY,
    "gpu_memset": OpKind.MEMSET,
    "cuda_sync": OpKind.SYNC,
}
_API_CATS = ("cuda_runtime", "cuda_driver")  # runtime first: it wins on a shared correlation id

# HIP copy kinds as roctracer names them (the GPU op's name or ``args.kind``, ``Copy`` prefix and ``2D``
# suffix removed), and as Kineto's getGpuActivityKindString writes them in ``args.kind``.
_HIP_KINDS = {
    "HOSTTODEVICE": CopyKind.HTOD,
    "DEVICETOHOST": CopyKind.DTOH,
    "DEVICETODEVICE": CopyKind.DTOD,
    "HOSTTOHOST": CopyKind.HTOH,
    "PEERTOPEER": CopyKind.PEER,
    "HTOD": CopyKind.HTOD,
    "DTOH": CopyKind.DTOH,
    "DTOD": CopyKind.DTOD,
    "HTOH": CopyKind.HTOH,
}
# Memory on each side of a HIP copy direction: the host side is never known to be pinned or pageable.
_HIP_SIDES = {
    CopyKind.HTOD: (MemKind.UNKNOWN, MemKind.DEVICE),
    CopyKind.DTOH: (MemKind.DEVICE, MemKind.UNKNOWN),
    CopyKind.DTOD: (MemKind.DEVICE, MemKind.DEVICE),
    CopyKind.HTOH: (MemKind.UNKNOWN, MemKind.UNKNOWN),
    CopyKind.PEER: (MemKind.DEVICE, MemKind.DEVICE),
}
# hipMemcpyKind (hip_runtime_api.h), the ``args.kind`` of a HIP copy call; 4 (hipMemcpyDefault) names none.
_HIP_MEMCPY_KIND = {0: CopyKind.HTOH, 1: CopyKind.HTOD, 2: CopyKind.DTOH, 3: CopyKind.DTOD}
# How the tracer's labels read in notes.
_LABELS = {CopyKind.HTOD: "HtoD", CopyKind.DTOH: "DtoH", CopyKind.DTOD: "DtoD", CopyKind.HTOH: "HtoH",
           CopyKind.PEER: "PtoP", CopyKind.UNKNOWN: "with no direction"}
# Document keys that only ROCm builds of the PyTorch profiler write.
_ROCM_KEYS = ("roctracer_version", "rocprofiler_version", "hip_runtime_version", "hip_driver_version")


#: Largest |ts| or |dur| accepted, ns: 2^62 ns (146 years) keeps ts + dur inside an int64.
_LIMIT_NS = 1 << 62

# What ``_int`` returns, in strict mode, for a value that is no integer.
_NOT_A_NUMBER = "not a number"
_NOT_FINITE = "not finite"


class NumberError(ValueError):
    """Values ``us_text_to_ns`` cannot convert: why, how many, and the first one as written."""

    def __init__(self, reason: str, count: int, first: object) -> None:
        self.reason = reason
        self.count = count
        self.first = first
        more = f" (and {count - 1:,} more)" if count > 1 else ""
        super().__init__(f"{reason}: {first!r}{more}")


def read_kineto(path: str | Path) -> Trace:
    """Read a Kineto trace (``.json`` or ``.json.gz``) into a Trace (may hold zero ops)."""
    path = Path(path)
    return kineto_from_document(load_json(path), source=str(path))


def load_json(path: Path) -> Any:
    """Parse a JSON file, gunzipping it first when it starts with the gzip magic bytes.

    Floats stay text (see the module docstring). Truncated or invalid input
    raises InputError naming the file.
    """
    raw: bytes | bytearray = read_input(path, what="trace")  # bounded: see nodecast.inputs
    gzipped = raw[:2] == GZIP_MAGIC
    if gzipped:
        try:
            raw = inflate_gzip(raw, path)  # a piece at a time, refused past the input limit (a gzip bomb)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(
                f"the gzip stream is truncated or corrupt ({exc})",
                path=path,
                hint="Copy the file again; it may have been cut short",
            ) from None
    if not raw or raw.isspace():  # as `not raw.strip()`, without a copy of the whole text
        raise InputError(
            "is empty once decompressed" if gzipped else "holds only white space",
            path=path,
            hint="The profiler may not have finished writing it; save the trace again",
        )
    try:
        # The C scanner recurses once per nesting level; no trace nests more than a few levels.
        with decoder_limits(path, "trace", "The file is damaged or not a Kineto/Chrome trace "
                                           "({\"traceEvents\": [...]}); save it again from the profiler"):
            return json.loads(raw, parse_float=str)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})",
            path=path,
            hint="The trace may be truncated; save it again from the profiler",
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None


def us_text_to_ns(values: Sequence[int | str]) -> np.ndarray:
    """Microsecond values (ints, or decimal text as ``load_json`` keeps floats) -> int64 ns.

    Exact for up to three decimals; a fourth decimal rounds half up. Numbers
    in exponent form fall back to ``Decimal``. Raises ``NumberError`` (a
    ValueError) when a value is not a number, not finite (NaN, Infinity) or
    beyond +-2^62 ns (``_LIMIT_NS``).
    """
    if not values:
        return np.zeros(0, dtype=np.int64)
    try:
        ns = _us_to_ns_fast(values)
    except (ValueError, OverflowError, InvalidOperation):
        ns = None
    if ns is None:
        # Something odd (text, NaN, a huge number): convert one by one, exactly, and report.
        ns = _us_to_ns_exact(values)
    return ns


def _us_to_ns_fast(values: Sequence[int | str]) -> np.ndarray | None:
    """Vectorized conversion; None (or an exception) when a value needs ``_us_to_ns_exact``."""
    limit_us = _LIMIT_NS // 1000
    if all(type(v) is int for v in values):
        us = np.asarray(values, dtype=np.int64)  # OverflowError beyond int64
        if (us > limit_us).any() or (us < -limit_us).any():
            return None
        return us * 1000
    ns = _us_to_ns_digits(values)
    if ns is not None:
        return ns
    text = np.asarray(values, dtype=str)
    odd = np.char.find(np.char.lower(text), "e") >= 0  # exponent form (also "inf", "nan"... fail below)
    neg = np.char.startswith(text, "-")
    digits = np.char.lstrip(text, "-")
    parts = np.char.partition(digits, ".")
    whole, frac = parts[:, 0], parts[:, 2]
    whole = np.where(odd | (whole == ""), "0", whole)
    frac4 = np.char.ljust(np.where(odd, "", frac), 4, "0").astype("U4")
    whole_us = whole.astype(np.int64)
    if (whole_us > limit_us).any():
        return None
    ns = whole_us * 1000 + (frac4.astype(np.int64) + 5) // 10
    ns = np.where(neg, -ns, ns)
    for i in np.flatnonzero(odd):
        one = _exact_ns(text[i])
        if isinstance(one, str):
            return None
        ns[i] = one
    return ns


def _us_to_ns_digits(values: Sequence[int | str]) -> np.ndarray | None:
    """Plain decimal text of at most three decimals (what Kineto writes) -> ns exactly: its digits with the
    point dropped. Five times faster than numpy's string arrays on text timestamps; None when a value is
    anything else (more decimals, an exponent, no text, out of range), for the general path."""
    out: list[int] = []
    append = out.append
    try:
        for v in values:
            if type(v) is int:
                append(v * 1000)
            elif len(v) > 4 and v[-4] == ".":  # type: ignore[arg-type]  # not text: TypeError, general path
                append(int(v.replace(".", "", 1)))  # type: ignore[union-attr]
            else:
                whole, _, frac = v.partition(".")  # type: ignore[union-attr]
                if len(frac) > 3:
                    return None
                append(int(whole + frac.ljust(3, "0")))
        ns = np.fromiter(out, dtype=np.int64, count=len(out))
    except (TypeError, AttributeError, ValueError, OverflowError):
        return None
    if len(ns) and (ns.max() > _LIMIT_NS or ns.min() < -_LIMIT_NS):
        return None
    return ns


def _exact_ns(value: object) -> int | str:
    """One microsecond value -> ns (half up, like the fast path), or why it cannot be converted."""
    try:
        us = Decimal(value) if type(value) is int else Decimal(str(value))
    except InvalidOperation:
        return _NOT_A_NUMBER
    if not us.is_finite():
        return _NOT_FINITE
    if us.adjusted() > 18:  # far beyond the limit: do not build a huge integer
        return "out of range"
    ns = int((us * 1000).to_integral_value(rounding=ROUND_HALF_UP))
    return ns if -_LIMIT_NS <= ns <= _LIMIT_NS else "out of range"


def _us_to_ns_exact(values: Sequence[int | str]) -> np.ndarray:
    """``us_text_to_ns`` one value at a time; NumberError naming what is wrong and how often."""
    converted = [_exact_ns(v) for v in values]
    bad = [i for i, x in enumerate(converted) if isinstance(x, str)]
    if bad:
        reasons = list(dict.fromkeys(converted[i] for i in bad))
        reason = " or ".join(str(r) for r in reasons)
        if "out of range" in reasons:
            reason += f" (nodecast reads up to {_LIMIT_NS // 1000:,} us)"
        first = values[bad[0]]
        raise NumberError(reason, len(bad), first if type(first) is int else str(first))
    return np.asarray(converted, dtype=np.int64)


def _int(value: Any, default: int, strict: bool = False) -> Any:
    """An integer field that may be absent, text or a float-as-text.

    Absent (None) gives ``default``. A value that is no finite number gives
    ``default`` too, or with ``strict`` the reason (``_NOT_A_NUMBER``,
    ``_NOT_FINITE``). Range is checked by ``_int_column``.
    """
    if type(value) is int:
        return value
    if value is None:
        return default
    try:
        number = Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        return _NOT_A_NUMBER if strict else default
    if not number.is_finite():
        return _NOT_FINITE if strict else default
    if number.adjusted() > 40:
        # Out of every column's range; stand in for it rather than build a huge integer.
        return (1 << 140) if number > 0 else -(1 << 140)
    return int(number)


def _int_column(
    raw: list[Any],
    out: np.ndarray,
    default: int,
    field: str,
    source: str,
    *,
    strict: bool = False,
    minimum: int | None = None,
    events: str = "GPU events",
) -> None:
    """Fill ``out`` with ``_int`` of every raw value, checking the range of ``out``'s dtype.

    A value outside the range (or below ``minimum``), or with ``strict`` no
    number at all, is an InputError naming ``field`` and counting the events:
    numpy would otherwise wrap it silently or raise OverflowError.
    """
    info = np.iinfo(out.dtype)
    lo = info.min if minimum is None else max(minimum, info.min)
    ints = [_int(v, default, strict) for v in raw]
    try:
        values = np.fromiter(ints, dtype=np.int64, count=len(ints))
    except (TypeError, ValueError, OverflowError):  # a reason (text) or an integer beyond int64
        values = None
    if values is not None and not ((values < lo) | (values > info.max)).any():
        out[:] = values
        return
    # Only a bad file gets here: find which values are wrong, one by one.
    def problem(x: Any) -> str:
        if isinstance(x, str):
            return x
        if lo <= x <= info.max:
            return ""
        return "negative" if x < 0 and lo == 0 else "out of range"

    reasons = [problem(x) for x in ints]
    bad = [i for i, r in enumerate(reasons) if r]
    kinds = list(dict.fromkeys(reasons[i] for i in bad))
    reason = " or ".join(kinds)
    if "out of range" in kinds:
        reason += f" (nodecast keeps it in {lo}..{info.max})"
    raise InputError(
        f"{reason} in {len(bad):,} of {len(raw):,} {events} (first: {raw[bad[0]]!r})",
        path=source or None,
        key=field,
        hint="The trace is damaged or was edited; save it again from the profiler",
    )


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
        _int_column(raw, cols[col], default, field, source, **kw)

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
    _decode_copies(gpu, args, cols, copies)
    if copies.size and _is_rocm(doc, api):
        _rocm_copies(api, cols, copies, notes)
    memsets = np.flatnonzero(kinds == OpKind.MEMSET)
    labels: dict[str, MemKind] = {}
    cols["dst_mem"][memsets] = [_memset_kind(str(gpu[i].get("name", "")), labels) for i in memsets]

    is_kernel = kinds == OpKind.KERNEL
    name_ids, names = _common.intern_strings(
        [str(e.get("name", "")) if k else None for e, k in zip(gpu, is_kernel, strict=True)]
    )
    cols["name_id"][:] = name_ids

    calls, call_corr, call_start = _join_api(api, cols, source)
    _op_work(args, cols, calls, call_corr, call_start, aten)
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
    return _ns_or_error(raw, field, source, "GPU events")


def _ns_or_error(raw: list[Any], field: str, source: str, events: str) -> np.ndarray:
    """``us_text_to_ns``, its NumberError turned into an InputError naming the field."""
    try:
        return us_text_to_ns(raw)
    except NumberError as exc:
        raise InputError(
            f"{exc.reason} in {exc.count:,} of {len(raw):,} {events} (first: {exc.first!r})",
            path=source or None,
            key=field,
            hint="The trace is damaged or was edited; save it again from the profiler",
        ) from None


def _decode_copies(
    gpu: list[dict[str, Any]], args: list[dict[str, Any]], cols: dict[str, np.ndarray], rows: np.ndarray
) -> None:
    """Copy direction and memory kinds of the memcpy rows, decoded once per distinct (name, kind)."""
    index: dict[tuple[str, str], int] = {}
    ids = np.fromiter(
        (index.setdefault((str(gpu[i].get("name", "")), str(args[i].get("kind", ""))), len(index)) for i in rows),
        dtype=np.int64,
        count=len(rows),
    )
    table = np.array([_decode_copy(name, kind) for name, kind in index], dtype=np.int8).reshape(-1, 3)
    cols["copy_kind"][rows] = table[ids, 0]
    cols["src_mem"][rows] = table[ids, 1]
    cols["dst_mem"][rows] = table[ids, 2]


def _hip_direction(label: str) -> CopyKind:
    """``CopyDeviceToHost``, ``CopyHostToDevice2D``, ``DtoH``... -> CopyKind (UNKNOWN when none)."""
    key = label.upper().replace(" ", "").removeprefix("COPY").removesuffix("2D")
    return _HIP_KINDS.get(key, CopyKind.UNKNOWN)


def _decode_copy(name: str, hip_kind: str) -> tuple[CopyKind, MemKind, MemKind]:
    """(direction, src, dst) of one copy: CUPTI's name, else a HIP op name, else HIP's ``args.kind``."""
    copy, src, dst = _common.parse_memcpy_name(name)
    if copy == CopyKind.UNKNOWN:
        copy = _hip_direction(name)
        if copy == CopyKind.UNKNOWN:
            copy = _hip_direction(hip_kind)
        src, dst = _HIP_SIDES.get(copy, (src, dst))
    return copy, src, dst


def _is_rocm(doc: Any, api: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether the trace comes from a ROCm build of the profiler (its keys, or HIP calls)."""
    if isinstance(doc, dict) and any(k in doc for k in _ROCM_KEYS):
        return True
    return any(str(e.get("name", "")).startswith("hip") for cat in _API_CATS for e in api[cat][:100])


def _api_direction(event: dict[str, Any]) -> CopyKind:
    """The direction a HIP copy call asked for: its name (``hipMemcpyDtoHAsync``) or ``args.kind``."""
    name = str(event.get("name", ""))
    if name.startswith("hipMemcpy"):
        token = name.removeprefix("hipMemcpy").removesuffix("Async")
        if token.upper() in ("HTOD", "DTOH", "DTOD"):
            return _HIP_KINDS[token.upper()]
    args = event.get("args")
    kind = _int(args.get("kind"), -1) if type(args) is dict else -1
    return _HIP_MEMCPY_KIND.get(kind, CopyKind.UNKNOWN) if type(kind) is int else CopyKind.UNKNOWN


def _rocm_copies(api: dict[str, list[dict[str, Any]]], cols: dict[str, np.ndarray], rows: np.ndarray,
                 notes: list[str]) -> None:
    """ROCm copies: direction from the HIP call where the tracer's label disagrees; say what is unknown."""
    asked: dict[int, CopyKind] = {}
    for e in api["cuda_runtime"]:
        if str(e.get("name", "")).startswith("hipMemcpy") and type(e.get("args")) is dict:
            corr = _int(e["args"].get("correlation"), -1)
            direction = _api_direction(e)
            if type(corr) is int and corr > 0 and direction != CopyKind.UNKNOWN:
                asked[corr] = direction
    if asked:
        label = cols["copy_kind"][rows]
        call = np.fromiter((asked.get(int(c), CopyKind.UNKNOWN) for c in cols["correlation"][rows]),
                           dtype=np.int8, count=len(rows))
        # Only host copies are corrected: a DtoD call the tracer labels otherwise is left as labelled.
        fix = ((call == CopyKind.HTOD) | (call == CopyKind.DTOH)) & (call != label)
        if fix.any():
            for was in np.unique(label[fix]):
                n = int(np.count_nonzero(fix & (label == was)))
                notes.append(
                    f"{n:,} {'copy' if n == 1 else 'copies'} labelled {_LABELS.get(int(was), CopyKind(int(was)).name)} "
                    f"by the ROCm tracer {'is a host copy' if n == 1 else 'are host copies'} by their HIP call "
                    "(hipMemcpyKind): read in the direction the call asked for (ROCm/roctracer#45)"
                )
            fixed = rows[fix]
            cols["copy_kind"][fixed] = call[fix]
            for direction in (CopyKind.HTOD, CopyKind.DTOH):
                sel = fixed[call[fix] == direction]
                cols["src_mem"][sel], cols["dst_mem"][sel] = _HIP_SIDES[direction]
    kind, src, dst = cols["copy_kind"][rows], cols["src_mem"][rows], cols["dst_mem"][rows]
    unknown = int(np.count_nonzero(((kind == CopyKind.HTOD) & (src == MemKind.UNKNOWN))
                                   | ((kind == CopyKind.DTOH) & (dst == MemKind.UNKNOWN))))
    if unknown:
        notes.append(
            f"{unknown:,} host {'copy' if unknown == 1 else 'copies'}: ROCm traces do not record whether host "
            "memory was pinned or pageable (kept unknown)"
        )


def _memset_kind(name: str, cache: dict[str, MemKind]) -> MemKind:
    """``Memset (Device)`` -> MemKind.DEVICE; UNKNOWN when the name carries no kind."""
    if name not in cache:
        inner = name[name.find("(") + 1 : name.rfind(")")] if "(" in name else ""
        cache[name] = _common.mem_kind_from_label(inner)
    return cache[name]


def _join_api(api: dict[str, list[dict[str, Any]]], cols: dict[str, np.ndarray], source: str
              ) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray]:
    """CPU API start/end per op from the runtime/driver events with the same correlation.

    Returns the calls (runtime first), their correlation ids and starts (ns), for ``_op_work``.
    """
    calls = [e for cat in _API_CATS for e in api[cat]]
    what = "cuda_runtime/cuda_driver events"
    corr = np.empty(len(calls), dtype=np.int64)
    raw_corr = [a.get("correlation") if type(a := e.get("args")) is dict else None for e in calls]
    _int_column(raw_corr, corr, -1, "args.correlation", source, events=what)
    # Absent API times read 0, as before: they only fill api_start_ns/api_end_ns.
    start = _ns_or_error([e.get("ts", 0) for e in calls], "ts", source, what)
    end = start + _ns_or_error([e.get("dur", 0) for e in calls], "dur", source, what)
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
    start, ok = _lenient_ns([e.get("ts") for e in aten])
    dur, ok_dur = _lenient_ns([e.get("dur") for e in aten])
    ok &= ok_dur & (dur >= 0)
    if not ok.all():
        aten = [e for e, good in zip(aten, ok.tolist(), strict=True) if good]
        start, dur = start[ok], dur[ok]
    threads: dict[object, int] = {}
    call = first_match(call_corr, cols["correlation"][kernels])
    launched = call >= 0
    launch_thread = np.full(len(kernels), -1, dtype=np.int64)
    launch_thread[launched] = _thread_ids([calls[i] for i in call[launched]], threads)
    launch_start = np.where(launched, call_start[np.maximum(call, 0)] if len(call_start) else 0, 0)
    aten_args = [e.get("args") for e in aten]
    link = launching_ops(
        _external_ids([args[i] for i in kernels]), cols["start_ns"][kernels], launch_start, launch_thread,
        start, start + dur, _thread_ids(aten, threads), _external_ids(aten_args),
    )
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


def _lenient_ns(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``us_text_to_ns`` of a field read only where it can be: (ns, ok), 0 and False where absent or no number."""
    if None not in values:
        try:
            return us_text_to_ns(values), np.ones(len(values), dtype=bool)
        except NumberError:
            pass
    ns = [None if v is None else _exact_ns(v) for v in values]
    ok = np.fromiter((type(v) is int for v in ns), dtype=bool, count=len(ns))
    return np.array([v if type(v) is int else 0 for v in ns], dtype=np.int64), ok


def _external_ids(args: list[Any]) -> np.ndarray:
    """``args["External id"]`` of each event as int64 (-1: absent, not an integer, or args not an object)."""
    ids = [a.get("External id", -1) if type(a) is dict else -1 for a in args]
    try:
        return np.fromiter(ids, dtype=np.int64, count=len(ids))  # the profiler writes plain integers
    except (TypeError, ValueError, OverflowError):
        ids = [_int(i, -1) for i in ids]
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
            listed[_int(p.get("id"), len(listed))] = props
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
            gpus[_int(p.get("id"), len(gpus))] = str(p["name"])
    used = set(np.unique(devices).tolist()) if len(devices) else set()
    if len(gpus) == 1 and len(used) == 1 and not used & set(gpus):
        (listed, name), (dev,) = next(iter(gpus.items())), used
        notes.append(
            f"deviceProperties lists only id {listed} ({name}) but every op runs on device {dev}: taken to be that GPU"
        )
        gpus = {dev: name}
    return dict(sorted(gpus.items()))
