"""How memory-bound a kernel looks from the trace alone: the bytes copied to the GPU for it and back after it.

A program that copies its inputs to the GPU, runs a kernel and copies the
results back reads each input byte and writes each output byte at least once
in DRAM: the copies give a lower bound of the kernel's DRAM traffic, its
*compulsory bytes* ``F``. Per (device, stream), in GPU order, a kernel's ``F``
is the host-to-device bytes copied since the previous kernel of that stream
plus the device-to-host bytes copied before the next one::

    HtoD a | HtoD b | kernel k1 | DtoH c | kernel k2 | kernel k3 | DtoH d
    F(k1) = a + b + c,  F(k2) = 0,  F(k3) = d

The *memory share* of a launch of duration ``T`` on a GPU of DRAM bandwidth
``BW`` is ``u = F / (T * BW)``: the fraction of its time that moving those
bytes once at full bandwidth takes (a memory-bound streaming kernel is near 1;
the kernel-zoo ``vectorAdd`` reaches 0.68-0.84 of the data-sheet bandwidth on
its four GPUs, a naive matrix multiply 0.0003). Kernels with no copy beside
them (``F = 0``: data already resident, as in a training loop) have no
evidence either way: their share is NaN. Vectorized: each copy finds its
kernel by counting the kernels before its row (``np.cumsum``); only copies
whose neighbouring kernel is of another stream (streams interleaved on one
device) are looked up among the kernels sorted by stream (one binary search);
the bytes are summed per kernel (``np.bincount``).
"""

from __future__ import annotations

import numpy as np

from nodecast.traces.kinds import CopyKind, OpKind
from nodecast.traces.trace import Trace


def compulsory_bytes(trace: Trace) -> np.ndarray:
    """``F`` of every op (float64 bytes; 0 for non-kernels and kernels with no copy beside them)."""
    out = np.zeros(len(trace))
    out[kernel_rows(trace)] = kernel_compulsory_bytes(trace)
    return out


def kernel_rows(trace: Trace) -> np.ndarray:
    """Indices of the kernel ops (memoized per trace)."""
    return trace.memo(("kernel-rows",), lambda: np.flatnonzero(trace["kind"] == OpKind.KERNEL))


def kernel_compulsory_bytes(trace: Trace) -> np.ndarray:
    """``F`` of every kernel op, in ``kernel_rows`` order (float64 bytes).

    Memoized per trace (``Trace.memo``): every kernel model of a projection shares it.
    """
    return trace.memo(("kernel-compulsory-bytes",), lambda: _compulsory_bytes(trace))


def _compulsory_bytes(trace: Trace) -> np.ndarray:
    kind = trace["kind"]
    is_kernel = kind == OpKind.KERNEL
    kernels = kernel_rows(trace)
    is_copy = kind == OpKind.MEMCPY
    copy_kind = trace["copy_kind"]
    htod = np.flatnonzero(is_copy & (copy_kind == CopyKind.HTOD))
    dtoh = np.flatnonzero(is_copy & (copy_kind == CopyKind.DTOH))
    if kernels.size == 0 or htod.size + dtoh.size == 0:
        return np.zeros(len(kernels))
    # Rows are in (device, start) order, so within one (device, stream) a row's position orders it in time. A
    # copy's kernel is first taken as the next (HtoD) or previous (DtoH) kernel of any stream, by counting the
    # kernels before its row; where that kernel is of another (device, stream) (streams interleaved on a device),
    # the copy's own stream's kernel is searched among the kernels sorted by stream (``_other_stream``).
    kernels_before = np.cumsum(is_kernel)  # at a copy's row: the kernels strictly before it
    copies = np.concatenate([htod, dtoh])
    target = np.concatenate([kernels_before[htod], kernels_before[dtoh] - 1])
    ok = (target >= 0) & (target < len(kernels))
    dev, stream = trace["device"], trace["stream"]
    one_device = dev.min() == dev.max()
    if not (one_device and stream.min() == stream.max()):
        k_rows = kernels[np.where(ok, target, 0)]
        wrong = stream[k_rows] != stream[copies]
        if not one_device:
            wrong |= dev[k_rows] != dev[copies]
        wrong &= ok
        if wrong.any():
            target[wrong] = _other_stream(trace, kernels, copies[wrong], np.arange(len(copies))[wrong] < len(htod))
            ok = (target >= 0) & (target < len(kernels))
    weights = trace["bytes"][copies[ok]].astype(np.float64)
    return np.bincount(target[ok], weights=weights, minlength=len(kernels))


def _other_stream(trace: Trace, kernels: np.ndarray, copies: np.ndarray, is_htod: np.ndarray) -> np.ndarray:
    """Index into ``kernels`` of each copy's kernel in its own (device, stream): the first kernel after an HtoD
    copy, the last before a DtoH copy (-1 or ``len(kernels)`` where there is none): one binary search among the
    kernels in (stream group, position) order."""
    import pandas as pd

    def key(rows: np.ndarray) -> np.ndarray:
        return trace["device"][rows].astype(np.int64) << 40 | (trace["stream"][rows].astype(np.int64) & ((1 << 40) - 1))

    codes, _ = pd.factorize(np.concatenate([key(kernels), key(copies)]))
    k_code, c_code = codes[: len(kernels)].astype(np.int64), codes[len(kernels):].astype(np.int64)
    span = np.int64(len(trace) + 1)
    perm = np.argsort(k_code * span + kernels, kind="stable")
    k_sorted = (k_code * span + kernels)[perm]
    pos = np.searchsorted(k_sorted, c_code * span + copies)  # first kernel after the copy in (group, position) order
    found = np.where(is_htod, pos, pos - 1)
    inside = (found >= 0) & (found < len(kernels))
    inside[inside] &= k_code[perm[found[inside]]] == c_code[inside]  # the kernel must be of the copy's own stream
    return np.where(inside, perm[np.clip(found, 0, len(kernels) - 1)], -1)


def memory_share(trace: Trace, rows: np.ndarray, dram_bps: float, t_s: np.ndarray | None = None) -> np.ndarray:
    """``u = F / (T * BW)`` of the kernel rows ``rows`` (sorted; NaN where ``F = 0`` or the duration is 0).

    ``t_s``: the rows' durations in seconds, when the caller has them.
    """
    kernels = kernel_rows(trace)
    f = kernel_compulsory_bytes(trace)
    if rows is not kernels:  # a subset of the kernels (the callers' usual rows are ``kernel_rows`` itself)
        f = f[np.searchsorted(kernels, rows)]
    t = (trace["end_ns"][rows] - trace["start_ns"][rows]) * 1e-9 if t_s is None else t_s
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((f > 0) & (t > 0), f / (t * dram_bps), np.nan)
