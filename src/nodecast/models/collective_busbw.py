"""nccl-tests' bandwidths of a collective: algorithm bandwidth and bus bandwidth (NVIDIA/nccl-tests doc/PERFORMANCE.md).

Every NCCL user reads these two numbers, so nodecast prints them with the same definitions::

    algbw = size / time                      (bytes/s; size as nccl-tests counts it, below)
    busbw = algbw x factor(op, n)            (n GPUs in the group)

    all_reduce                               2 (n - 1) / n
    all_gather, reduce_scatter, all_to_all   (n - 1) / n
    broadcast, reduce, send_recv             1

The factor turns algbw into the rate each GPU's link must carry, so busbw is comparable across group sizes and
against a link's peak. ``size`` is nccl-tests' "size" column: the whole buffer of one rank (all_gather: the gathered
output, n x each rank's part; reduce_scatter: the whole input, n x each rank's output; all_to_all: all that one rank
sends, n parts of size / n; send_recv: the bytes sent). Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

import numpy as np

from nodecast.traces.op_classes import OpClass

#: The collectives nodecast models, in the order tables list them (nccl-tests' perf binaries, same names).
COLLECTIVES: tuple[OpClass, ...] = (OpClass.ALL_REDUCE, OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER,
                                    OpClass.ALL_TO_ALL, OpClass.BROADCAST, OpClass.REDUCE, OpClass.SEND_RECV)


def bus_factor(op: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """busbw / algbw per op (nccl-tests doc/PERFORMANCE.md): 2(n-1)/n, (n-1)/n or 1 by op class; NaN for ops that
    are not collectives. ``op`` holds ``OpClass`` codes, ``gpus`` the group sizes n (same length or scalars)."""
    op = np.asarray(op)
    n = np.asarray(gpus, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        part = (n - 1.0) / n
    return np.select(
        [op == OpClass.ALL_REDUCE,
         np.isin(op, (OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER, OpClass.ALL_TO_ALL)),
         np.isin(op, (OpClass.BROADCAST, OpClass.REDUCE, OpClass.SEND_RECV))],
        [2.0 * part, part, np.ones_like(part)], np.nan)


def algbw(size_bytes: np.ndarray, time_s: np.ndarray) -> np.ndarray:
    """Algorithm bandwidth, bytes/s: size / time (NaN where the time is not > 0)."""
    t = np.asarray(time_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, np.asarray(size_bytes, dtype=np.float64) / t, np.nan)


def busbw(op: np.ndarray, size_bytes: np.ndarray, time_s: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Bus bandwidth, bytes/s: algbw x ``bus_factor`` (nccl-tests doc/PERFORMANCE.md)."""
    return algbw(size_bytes, time_s) * bus_factor(op, gpus)
