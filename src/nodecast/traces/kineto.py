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
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from nodecast.errors import InputError
from nodecast.traces import _common
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import Trace, TraceMeta

FORMAT = "kineto-json"

GZIP_MAGIC = b"\x1f\x8b"

_GPU_CATS = {
    "kernel": OpKind.KERNEL,
    "gpu_memcpy": OpKind.MEMCPY,
    "gpu_memset": OpKind.MEMSET,
    "cuda_sync": OpKind.SYNC,
}
_API_CATS = ("cuda_runtime", "cuda_driver")  # runtime first: it wins on a shared correlation id

# HIP copy kinds as roctracer names them in ``args.kind`` (used when the name has no direction).
_HIP_KINDS = {
    "HOSTTODEVICE": CopyKind.HTOD,
    "DEVICETOHOST": CopyKind.DTOH,
    "DEVICETODEVICE": CopyKind.DTOD,
    "HOSTTOHOST": CopyKind.HTOH,
    "PEERTOPEER": CopyKind.PEER,
}


def read_kineto(path: str | Path) -> Trace:
    """Read a Kineto trace (``.json`` or ``.json.gz``) into a Trace (may hold zero ops)."""
    path = Path(path)
    return kineto_from_document(load_json(path), source=str(path))


def load_json(path: Path) -> Any:
    """Parse a JSON file, gunzipping it first when it starts with the gzip magic bytes.

    Floats stay text (see the module docstring). Truncated or invalid input
    raises InputError naming the file.
    """
    raw = path.read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(
                f"the gzip stream is truncated or corrupt ({exc})",
                path=path,
                hint="Copy the file again; it may have been cut short",
            ) from None
    try:
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
    in exponent form fall back to ``Decimal``.
    """
    if not values:
        return np.zeros(0, dtype=np.int64)
    if all(type(v) is int for v in values):
        return np.asarray(values, dtype=np.int64) * 1000
    text = np.asarray(values, dtype=str)
    odd = np.char.find(np.char.lower(text), "e") >= 0  # exponent form (also "inf", "nan"... fail below)
    neg = np.char.startswith(text, "-")
    digits = np.char.lstrip(text, "-")
    parts = np.char.partition(digits, ".")
    whole, frac = parts[:, 0], parts[:, 2]
    whole = np.where(odd | (whole == ""), "0", whole)
    frac4 = np.char.ljust(np.where(odd, "", frac), 4, "0").astype("U4")
    try:
        ns = whole.astype(np.int64) * 1000 + (frac4.astype(np.int64) + 5) // 10
    except ValueError as exc:
        msg = f"a timestamp is not a number ({exc})"
        raise ValueError(msg) from None
    ns = np.where(neg, -ns, ns)
    for i in np.flatnonzero(odd):
        try:
            ns[i] = int((Decimal(text[i]) * 1000).to_integral_value())
        except (InvalidOperation, ValueError, OverflowError):
            msg = f"a timestamp is not a number: {text[i]!r}"
            raise ValueError(msg) from None
    return ns


def _int(value: Any, default: int) -> int:
    """An integer field that may be absent, text or a float-as-text."""
    if type(value) is int:
        return value
    try:
        return int(Decimal(value))
    except (InvalidOperation, TypeError, ValueError):
        return default


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
    for e in events:
        if type(e) is not dict or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat in _GPU_CATS:
            gpu.append(e)
        elif cat in api:
            api[cat].append(e)

    n = len(gpu)
    cols = _common.allocate(n)
    args = [a if type(a := e.get("args")) is dict else {} for e in gpu]
    try:
        start = us_text_to_ns([e.get("ts", 0) for e in gpu])
        dur = us_text_to_ns([e.get("dur", 0) for e in gpu])
    except ValueError as exc:
        raise InputError(str(exc), path=source or None) from None
    cols["start_ns"][:] = start
    cols["end_ns"][:] = start + dur
    del start, dur
    cols["kind"][:] = [_GPU_CATS[e["cat"]] for e in gpu]
    pairs = list(zip(args, gpu, strict=True))
    cols["device"][:] = [_int(a.get("device", a.get("inDevice", e.get("pid"))), 0) for a, e in pairs]
    cols["stream"][:] = [_int(a.get("stream", e.get("tid")), -1) for a, e in pairs]
    del pairs
    cols["correlation"][:] = [_int(a.get("correlation"), -1) for a in args]
    cols["bytes"][:] = [_int(a.get("bytes"), 0) for a in args]
    cols["src_device"][:] = [_int(a.get("fromDevice"), -1) for a in args]
    cols["dst_device"][:] = [_int(a.get("toDevice"), -1) for a in args]
    for key, names in (("grid", ("grid_x", "grid_y", "grid_z")), ("block", ("block_x", "block_y", "block_z"))):
        dims = [a.get(key) for a in args]
        for axis, col in enumerate(names):
            cols[col][:] = [_int(d[axis], 0) if type(d) is list and len(d) == 3 else 0 for d in dims]

    kinds = cols["kind"]
    _decode_copies(gpu, args, cols, np.flatnonzero(kinds == OpKind.MEMCPY))
    memsets = np.flatnonzero(kinds == OpKind.MEMSET)
    labels: dict[str, MemKind] = {}
    cols["dst_mem"][memsets] = [_memset_kind(str(gpu[i].get("name", "")), labels) for i in memsets]

    is_kernel = kinds == OpKind.KERNEL
    name_ids, names = _common.intern_strings(
        [str(e.get("name", "")) if k else None for e, k in zip(gpu, is_kernel, strict=True)]
    )
    cols["name_id"][:] = name_ids

    notes: list[str] = []
    _join_api(api, cols, source)
    if "baseTimeNanoseconds" in doc:
        notes.append(f"timestamps kept as written, relative to baseTimeNanoseconds={doc['baseTimeNanoseconds']}")
    gpus = _gpus(doc, cols["device"], notes)
    meta = TraceMeta(source=source, format=FORMAT, profiler=_profiler(doc), gpus=gpus, notes=notes)
    return _common.finish(cols, names, meta)


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


def _decode_copy(name: str, hip_kind: str) -> tuple[CopyKind, MemKind, MemKind]:
    """(direction, src, dst) of one copy; HIP's ``args.kind`` helps when the name has no direction."""
    copy, src, dst = _common.parse_memcpy_name(name)
    if copy == CopyKind.UNKNOWN:
        hip = hip_kind.upper().replace(" ", "").removeprefix("COPY")
        copy = _HIP_KINDS.get(hip, CopyKind.UNKNOWN)
    return copy, src, dst


def _memset_kind(name: str, cache: dict[str, MemKind]) -> MemKind:
    """``Memset (Device)`` -> MemKind.DEVICE; UNKNOWN when the name carries no kind."""
    if name not in cache:
        inner = name[name.find("(") + 1 : name.rfind(")")] if "(" in name else ""
        cache[name] = _common.mem_kind_from_label(inner)
    return cache[name]


def _join_api(api: dict[str, list[dict[str, Any]]], cols: dict[str, np.ndarray], source: str) -> int:
    """CPU API start/end per op from the runtime/driver events with the same correlation."""
    calls = [e for cat in _API_CATS for e in api[cat]]
    corr = np.array(
        [_int(a.get("correlation") if type(a := e.get("args")) is dict else None, -1) for e in calls], dtype=np.int64
    )
    try:
        start = us_text_to_ns([e.get("ts", 0) for e in calls])
        end = start + us_text_to_ns([e.get("dur", 0) for e in calls])
    except ValueError as exc:
        raise InputError(str(exc), path=source or None) from None
    return _common.join_api_times(cols["correlation"], corr, start, end, cols["api_start_ns"], cols["api_end_ns"])


def _profiler(doc: dict[str, Any]) -> str:
    """Profiler description from the document's version fields."""
    parts = ["PyTorch profiler (Kineto)"]
    for key, label in (("cupti_version", "CUPTI"), ("roctracer_version", "roctracer"), ("schemaVersion", "schema")):
        if key in doc:
            parts.append(f"{label} {doc[key]}")
    return ", ".join(parts)


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
