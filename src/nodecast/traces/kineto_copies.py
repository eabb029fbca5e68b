"""Copy directions and memory kinds of a Kineto trace's GPU copies and memsets, CUDA's and ROCm's.

CUDA copies are named after CUPTI's labels (``Memcpy HtoD (Pageable ->
Device)``, ``_common.parse_memcpy_name``). ROCm traces (roctracer or
rocprofiler-sdk under Kineto) label copies ``Memcpy DtoH (Device -> Host)``
(``args.kind`` ``DtoH``), or, before Kineto's rewrite, after roctracer's op
string (``CopyDeviceToHost``, ``...2D``). Their host side never says whether
the memory was pinned or pageable: it stays ``MemKind.UNKNOWN`` (never
guessed), with a note. ROCm's tracer also labels a host copy DtoD when the
host buffer is device-accessible (ROCm/roctracer#45: "reports all kinds of
memcpy as CopyDeviceToDevice when using pinned memory"), so the direction is
taken from the HIP call with the same correlation where that call names one
(``args.kind``, the ``hipMemcpyKind`` asked for: 1 HtoD, 2 DtoH, 3 DtoD; or a
``hipMemcpyHtoD``/``DtoH``/``DtoD`` name), with a note counting the copies it
changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodecast.traces import _common
from nodecast.traces.kineto_json import int_field
from nodecast.traces.kinds import CopyKind, MemKind


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


def decode_copies(
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


def is_rocm(doc: Any, api: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether the trace comes from a ROCm build of the profiler (its keys, or HIP calls)."""
    if isinstance(doc, dict) and any(k in doc for k in _ROCM_KEYS):
        return True
    return any(str(e.get("name", "")).startswith("hip") for calls in api.values() for e in calls[:100])


def _api_direction(event: dict[str, Any]) -> CopyKind:
    """The direction a HIP copy call asked for: its name (``hipMemcpyDtoHAsync``) or ``args.kind``."""
    name = str(event.get("name", ""))
    if name.startswith("hipMemcpy"):
        token = name.removeprefix("hipMemcpy").removesuffix("Async")
        if token.upper() in ("HTOD", "DTOH", "DTOD"):
            return _HIP_KINDS[token.upper()]
    args = event.get("args")
    kind = int_field(args.get("kind"), -1) if type(args) is dict else -1
    return _HIP_MEMCPY_KIND.get(kind, CopyKind.UNKNOWN) if type(kind) is int else CopyKind.UNKNOWN


def rocm_copies(api: dict[str, list[dict[str, Any]]], cols: dict[str, np.ndarray], rows: np.ndarray,
                 notes: list[str]) -> None:
    """ROCm copies: direction from the HIP call where the tracer's label disagrees; say what is unknown."""
    asked: dict[int, CopyKind] = {}
    for e in api["cuda_runtime"]:
        if str(e.get("name", "")).startswith("hipMemcpy") and type(e.get("args")) is dict:
            corr = int_field(e["args"].get("correlation"), -1)
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


def memset_kind(name: str, cache: dict[str, MemKind]) -> MemKind:
    """``Memset (Device)`` -> MemKind.DEVICE; UNKNOWN when the name carries no kind."""
    if name not in cache:
        inner = name[name.find("(") + 1 : name.rfind(")")] if "(" in name else ""
        cache[name] = _common.mem_kind_from_label(inner)
    return cache[name]
