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
kernel by one binary search among the kernels of its (device, stream), and
the bytes are summed per kernel (``np.bincount``).
"""

from __future__ import annotations

import numpy as np

from nodecast.traces.kinds import CopyKind, OpKind
from nodecast.traces.trace import Trace


def compulsory_bytes(trace: Trace) -> np.ndarray:
    """``F`` of every op (float64 bytes; 0 for non-kernels and kernels with no copy beside them).

    Memoized per trace (``Trace.memo``): every kernel model of a projection shares it.
    """
    return trace.memo(("kernel-compulsory-bytes",), lambda: _compulsory_bytes(trace))


def _compulsory_bytes(trace: Trace) -> np.ndarray:
    kind = trace["kind"]
    out = np.zeros(len(trace))
    kernels = trace.memo(("kernel-rows",), lambda: np.flatnonzero(kind == OpKind.KERNEL))
    copy_rows = np.flatnonzero(kind == OpKind.MEMCPY)
    copy = trace["copy_kind"][copy_rows]
    htod, dtoh = copy_rows[copy == CopyKind.HTOD], copy_rows[copy == CopyKind.DTOH]
    if kernels.size == 0 or htod.size + dtoh.size == 0:
        return out
    # Each copy goes to a kernel of its (device, stream): HtoD to the next one, DtoH to the previous one. Rows are
    # in (device, start) order, so within one (device, stream) a row's position orders it in time. Kernels are put
    # in (stream group, position) order and each copy is found among them by one binary search.
    import pandas as pd

    def group_key(rows: np.ndarray) -> np.ndarray:
        return trace["device"][rows].astype(np.int64) << 40 | (trace["stream"][rows].astype(np.int64) & ((1 << 40) - 1))

    copies = np.concatenate([htod, dtoh])
    keys = np.concatenate([group_key(kernels), group_key(copies)])
    if keys.min() == keys.max():  # one device, one stream: the usual single-stream program
        codes = np.zeros(len(keys), dtype=np.int64)
    else:
        codes, _ = pd.factorize(keys)
    k_code, c_code = codes[: len(kernels)].astype(np.int64), codes[len(kernels):].astype(np.int64)
    span = np.int64(len(trace) + 1)
    k_key = k_code * span + kernels
    if (np.diff(k_key) < 0).any():  # several streams interleaved on one device
        perm = np.argsort(k_key, kind="stable")
        kernels, k_key, k_code = kernels[perm], k_key[perm], k_code[perm]
    c_key = c_code * span + copies
    pos = np.searchsorted(k_key, c_key)  # first kernel after the copy in (group, position) order
    is_htod = np.arange(len(copies)) < len(htod)
    target = np.where(is_htod, pos, pos - 1)
    ok = (target >= 0) & (target < len(kernels))
    ok[ok] &= k_code[target[ok]] == c_code[ok]  # the kernel must be of the copy's own stream
    weights = trace["bytes"][copies[ok]].astype(np.float64)
    out[kernels] = np.bincount(target[ok], weights=weights, minlength=len(kernels))
    return out


def memory_share(trace: Trace, rows: np.ndarray, dram_bps: float, t_s: np.ndarray | None = None) -> np.ndarray:
    """``u = F / (T * BW)`` of the kernel rows ``rows`` (NaN where ``F = 0`` or the duration is 0).

    ``t_s``: the rows' durations in seconds, when the caller has them.
    """
    f = compulsory_bytes(trace)[rows]
    t = (trace["end_ns"][rows] - trace["start_ns"][rows]) * 1e-9 if t_s is None else t_s
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((f > 0) & (t > 0), f / (t * dram_bps), np.nan)
