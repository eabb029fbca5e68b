"""Pageable copies: the CUDA driver's pipelined staging through pinned buffers, in GPU time.

A copy between pageable host memory (``malloc``, ``new``) and the GPU cannot
be a DMA from or to the user's pages: the driver copies the data through
pinned buffers of its own, with one host thread. What is published about that
path, and what each piece of the model below rests on:

1. **Staging through driver-owned pinned memory.** NVIDIA's runtime and
   driver API reference, "API synchronization behavior": for transfers from
   pageable host memory to device memory "the function will return once the
   pageable buffer has been copied to the staging memory for DMA transfer to
   device memory, but the DMA to final destination may not have completed"
   (https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html).
   An answer on NVIDIA's developer forum about pageable ``cudaMemcpyAsync``
   (https://forums.developer.nvidia.com/t/cudamemcpyaync-with-pageable-memory-overlap-with-kernal/238833/2):
   the data is first copied to a runtime-maintained pinned buffer, then "the
   transfer proceeds as if it were pinned", and a transfer small enough
   proceeds roughly as if the memory were pinned.
2. **The staging copy is one CPU thread's memcpy, overlapped with the DMA.**
   Comm|Scope (Pearson et al., ICPE 2019, section 4.1,
   ../shared/reference/papers/commscope-transfer-microbenchmarks.txt): the
   pageable-to-pinned copy "happens at a relatively slow rate allowed by a
   single CPU thread moving memory"; on the NVLink systems "the pageable-to-GPU
   transfer rate does not exceed the pageable-to-pinned transfer rate, even
   though the pinned-to-GPU transfer rate is always higher": the slower stage
   sets the rate, as in a pipeline, not the sum of both stages; and two
   pageable copies never stage at once (their host copies serialize).
3. **Chunks and buffers.** NVIDIA does not publish its chunk size. Gdev
   (Kato et al., "Gdev: first-class GPU resource management in the operating
   system", USENIX ATC 2012; open source at github.com/shinpei0208/gdev), an
   implementation of the CUDA driver API, stages pageable copies in chunks of
   ``GDEV_CHUNK_DEFAULT_SIZE = 0x100000`` (1 MiB) through
   ``GDEV_PIPELINE_DEFAULT_COUNT = 2`` pinned buffers (``common/gdev_conf.h``),
   copying chunk k+1 on the host while the DMA moves chunk k, and a copy that
   fits in one chunk is staged whole before its DMA (``common/gdev_api.c``,
   ``__gmemcpy_to_device_p`` / ``__gmemcpy_from_device_p``). nodecast takes
   both constants from there (``CHUNK_BYTES``, ``BUFFERS``). A check that does
   not enter any projection: in AHEAD's Titan traces the pageable copies take
   exactly the pinned copies' GPU time up to 1 MiB host-to-device and up to
   2 MiB device-to-host, and depart from it above, which is where a two-buffer
   1-MiB pipeline departs in each direction (below).

The model: GPU time, as a profiler records it
-----------------------------------------------
A profiler's record of a pageable copy spans the DMAs, from the start of the
first chunk's to the end of the last one's; host copies before the first DMA
(host->device) or after the last (device->host) are outside it. With
``W(s)`` the wire time of an s-byte DMA over the link (AHEAD eqs. 2-8,
``n_hat / LinkBW``; the caller's model), ``H`` one host thread's copy rate
(``Machine.host_copy_bandwidth``), ``C = CHUNK_BYTES``, ``m = ceil(n / C)``
chunks, the last of ``r = n - (m - 1) C`` bytes, and the DMAs of one copy
running in order on one copy engine, the schedule is a two-stage flow shop
whose makespan is the larger of the two resources' critical paths:

* host->device (the host stages chunk k, then its DMA may start)::

      m = 1:  T = W(n)
      m > 1:  T = max( (m-1) W(C) + W(r),                  DMA-bound
                       (m-2) C/H + W(C) + W(r),            host-bound, full chunks
                       ((m-2) C + r)/H + W(r) )             host-bound, last chunk

* device->host (the DMA fills a buffer, then the host drains it; with two
  buffers the DMA of chunk k waits for the host copy of chunk k-2)::

      m <= 2: T = W(C) + W(r)        (= W(n) for one chunk)
      m > 2:  T = max( (m-1) W(C) + W(r),  W(C) + (m-2) C/H + W(r) )

For large copies both tend to ``n / min(H, BW_eff)``: Comm|Scope's finding.
The 1-byte cost L+O is added once per copy by the transfer model, as for a
pinned copy.

Per-chunk overhead: none is added. Each chunk is its own DMA, but the host
queues the DMA of chunk k+1 while chunk k is on the wire, so the copy engine
does not idle between chunks when the DMA is the bottleneck; when the host
copy is, a DMA's start-up overlaps the next chunk's host copy, and what the
host spends per chunk on queueing it is part of its measured copy rate. The
first chunk's start-up is the copy's L+O.

What the model leaves out (said so, not hidden)
-----------------------------------------------
* The host copy of data still in the CPU caches runs faster than ``H`` (the
  rate between buffers larger than the last-level cache): a program that
  copies a buffer it has just written, as ``bandwidthTest`` does, stages its
  mid-size copies (2-8 MiB on Summit's POWER9) at cache speed.
* Copies of 64 KiB and less may take another path in NVIDIA's driver
  (Summit's pageable copies of 16-64 KiB are slower than its pinned ones,
  its 128 KiB-1 MiB ones are not); their fixed cost is the class's own
  1-byte cost, estimated from the source trace.
* One ``H`` per host for both directions. AHEAD's Titan traces stage at
  2.6 GB/s host-to-device and 3.8 GB/s device-to-host; nothing published
  says why, so nodecast does not guess a per-direction rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

#: Bytes staged per chunk: Gdev's ``GDEV_CHUNK_DEFAULT_SIZE`` (0x100000, 1 MiB); see the module docstring.
CHUNK_BYTES = 1 << 20
#: Pinned staging buffers used in turn: Gdev's ``GDEV_PIPELINE_DEFAULT_COUNT``.
BUFFERS = 2

Direction = Literal["read", "write"]
WireFn = Callable[[np.ndarray], np.ndarray]


def chunks(n: np.ndarray, chunk_bytes: int = CHUNK_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """(chunks ``m`` >= 1, bytes ``r`` of the last chunk) of copies of ``n`` bytes."""
    n = np.asarray(n, dtype=np.float64)
    m = np.maximum(1.0, np.ceil(n / chunk_bytes))
    return m, n - (m - 1.0) * chunk_bytes


def staged_time_s(
    n: np.ndarray,
    wire: WireFn,
    copy_bandwidth_bps: float,
    direction: Direction,
    *,
    chunk_bytes: int = CHUNK_BYTES,
) -> np.ndarray:
    """GPU time (s, without L+O) of pageable copies of ``n`` bytes staged through ``BUFFERS`` pinned buffers.

    ``wire(s)`` is the DMA time of s-byte transfers over the link (seconds,
    vectorized); ``copy_bandwidth_bps`` one host thread's copy rate (bytes/s);
    ``direction`` is ``"read"`` for host->device (the GPU reads the staging
    buffer) and ``"write"`` for device->host. The formulas are in the module
    docstring.
    """
    if not (np.isfinite(copy_bandwidth_bps) and copy_bandwidth_bps > 0):
        msg = f"host copy bandwidth must be a number > 0 bytes/s (got {copy_bandwidth_bps!r})"
        raise ValueError(msg)
    if direction not in ("read", "write"):
        msg = f"direction must be 'read' or 'write' (got {direction!r})"
        raise ValueError(msg)
    n = np.asarray(n, dtype=np.float64)
    m, r = chunks(n, chunk_bytes)
    w_chunk = float(np.asarray(wire(np.array([float(chunk_bytes)])))[0])
    w_last = wire(r)
    dma_bound = (m - 1.0) * w_chunk + w_last
    full = np.maximum(m - 2.0, 0.0) * chunk_bytes / copy_bandwidth_bps
    if direction == "read":
        host_full = full + w_chunk + w_last
        host_last = full + r / copy_bandwidth_bps + w_last
        staged = np.maximum(dma_bound, np.maximum(host_full, host_last))
    else:
        staged = np.maximum(dma_bound, w_chunk + full + w_last)
    return np.where(m <= 1.0, wire(n), staged)


def host_bound_above(wire: WireFn, copy_bandwidth_bps: float, chunk_bytes: int = CHUNK_BYTES) -> bool:
    """Whether the host copy, not the DMA, sets the rate of large copies (``C/H > W(C)``)."""
    w_chunk = float(np.asarray(wire(np.array([float(chunk_bytes)])))[0])
    return chunk_bytes / copy_bandwidth_bps > w_chunk


#: A pageable copy informs the host copy rate only when its time exceeds the DMAs alone by this factor.
HOST_BOUND_MARGIN = 1.1


def host_copy_rates(
    n: np.ndarray,
    time_s: np.ndarray,
    wire: WireFn,
    direction: Direction,
    *,
    chunk_bytes: int = CHUNK_BYTES,
) -> np.ndarray:
    """Per copy, one host thread's copy rate (bytes/s) its measured time implies; NaN where it implies none.

    ``time_s`` is each pageable copy's measured GPU time minus its 1-byte
    cost. The host-bound forms of ``staged_time_s`` are solved for ``H``, for
    the copies of at least three chunks whose time exceeds their DMAs alone by
    ``HOST_BOUND_MARGIN`` (a DMA-bound copy says nothing about ``H``).
    Device->host: ``H = (m-2) C / (T - W(C) - W(r))``; host->device: the
    larger of that and ``((m-2) C + r) / (T - W(r))`` (T is the larger of the
    two host-bound forms, so H is the larger of their solutions).
    """
    n = np.asarray(n, dtype=np.float64)
    t = np.asarray(time_s, dtype=np.float64)
    out = np.full(n.shape, np.nan)
    m, r = chunks(n, chunk_bytes)
    big = (m >= 3) & np.isfinite(t) & (t > 0)
    if not big.any():
        return out
    n_b, t_b, m_b, r_b = n[big], t[big], m[big], r[big]
    w_chunk = float(np.asarray(wire(np.array([float(chunk_bytes)])))[0])
    w_last = wire(r_b)
    dma = (m_b - 1.0) * w_chunk + w_last
    with np.errstate(divide="ignore", invalid="ignore"):
        # full chunks host-bound, the last one after them: H = (m-2) C / (T - W(C) - W(r))
        full = np.where(t_b - w_chunk - w_last > 0, (m_b - 2.0) * chunk_bytes / (t_b - w_chunk - w_last), np.nan)
        if direction == "read":
            # T = max(full-chunk form, last-chunk form): H is the larger of the two solutions
            last = np.where(t_b - w_last > 0, ((m_b - 2.0) * chunk_bytes + r_b) / (t_b - w_last), np.nan)
            rates = np.fmax(full, last)
        else:
            rates = full
    rates = np.where(t_b > HOST_BOUND_MARGIN * dma, rates, np.nan)
    out[big] = rates
    return out
