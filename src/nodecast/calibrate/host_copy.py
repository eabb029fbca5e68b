"""One host thread's memcpy rate: the rate of the CUDA driver's staging copy of pageable transfers.

Comm|Scope (section 4.1) finds that pageable ``cudaMemcpy`` is limited by the
driver's copy into its pinned buffer, "a relatively slow rate allowed by a
single CPU thread moving memory"; ``nodecast.models.pageable`` models it with
that rate, ``Machine.host_copy_bandwidth``. This module measures it, and needs
no GPU:

* **what is timed**: the C library's ``memmove`` (``ctypes.memmove``; glibc
  takes its ``memcpy`` path for buffers that do not overlap) of one buffer into
  another, in the calling thread, timed with ``time.perf_counter`` around the
  call;
* **sizes**: each buffer is ``LLC_FACTOR`` times the last-level cache and at
  least ``MIN_BYTES``, so that the copy streams from DRAM to DRAM as the
  driver's staging of a large copy does, and at most an eighth of the memory
  Linux reports available;
* **placement**: the thread is pinned to one NUMA node's CPUs and touches every
  page of both buffers first (first-touch places them on that node; the
  untimed warm-up copy faults in anything left);
* **repetitions**: repeated until ``BUDGET`` is spent (at least 5 copies),
  the **median** kept (the mean would take in a copy slowed by another
  process); the result is bytes copied per second, ``n / t`` (STREAM's Copy
  figure counts the bytes read and written, twice this).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nodecast.calibrate.host import bind_to_numa, llc_bytes, mem_available_bytes, numa_nodes
from nodecast.calibrate.plan import NumaNode
from nodecast.calibrate.stats import Budget, repeat_until_budget, summarize
from nodecast.errors import NodecastError

#: Each buffer is this many times the last-level cache...
LLC_FACTOR = 4
#: ...and at least this large (bytes): beyond the LLC of any host in the catalogue per socket.
MIN_BYTES = 256 << 20
#: At most this fraction of MemAvailable for one buffer (two buffers are allocated).
MAX_AVAILABLE_FRACTION = 1 / 8
#: Smallest buffer worth measuring, bytes (below it the copy stays in a large LLC).
FLOOR_BYTES = 16 << 20
#: Repeat for 1 s of copying, at least 5 and at most 200 copies, 10 s of wall time at most; one warm-up copy.
BUDGET = Budget(measured_s=1.0, min_reps=5, max_reps=200, wall_s=10.0, warmup_reps=1)
#: A quicker budget for ``--quick``.
QUICK_BUDGET = Budget(measured_s=0.2, min_reps=5, max_reps=50, wall_s=3.0, warmup_reps=1)

CopyFn = Callable[[int, int, int], object]


class HostCopyError(NodecastError, RuntimeError):
    """The host copy could not be measured (not enough memory)."""


@dataclass(frozen=True)
class HostCopyResult:
    """A measured single-thread copy rate.

    ``bandwidth_bps`` is bytes copied per second at the median repetition;
    ``samples_s`` every timed copy of ``size_bytes``; ``cpus`` the CPUs the
    thread ran on.
    """

    bandwidth_bps: float
    size_bytes: int
    samples_s: tuple[float, ...]
    llc_bytes: int | None
    cpus: tuple[int, ...]
    stopped_by: str

    @property
    def median_s(self) -> float:
        """Median time of one copy, seconds."""
        return summarize(self.samples_s).median_s

    def method(self) -> str:
        """One sentence for a machine file's facts: how it was measured."""
        llc = f"{self.llc_bytes / 2**20:g} MiB last-level cache" if self.llc_bytes else "last-level cache size unknown"
        s = summarize(self.samples_s)
        return (f"one thread's memmove (C library) of a {self.size_bytes / 2**20:g} MiB buffer into another "
                f"({llc}), thread pinned to CPUs {_cpus(self.cpus)}, pages touched first; median of "
                f"{s.n} timed copies after 1 warm-up ({s.min_s * 1e3:.2f}-{s.max_s * 1e3:.2f} ms each; "
                f"stopped by {self.stopped_by}); bytes copied per second (STREAM Copy counts twice this)")


def buffer_bytes(llc: int | None, available: int) -> int:
    """Size of each buffer: ``max(LLC_FACTOR x llc, MIN_BYTES)``, capped by the memory available.

    Raises HostCopyError when the cap is below ``FLOOR_BYTES``.
    """
    want = max(LLC_FACTOR * (llc or 0), MIN_BYTES)
    cap = int(available * MAX_AVAILABLE_FRACTION) if available > 0 else want
    size = min(want, cap)
    if size < FLOOR_BYTES:
        raise HostCopyError(f"not enough free memory to measure the host copy: {available / 2**20:.0f} MiB available, "
                            f"two buffers of at least {FLOOR_BYTES >> 20} MiB needed")
    return size - size % 4096


def measure_host_copy(
    size_bytes: int | None = None,
    *,
    node: NumaNode | None = None,
    budget: Budget = BUDGET,
    clock: Callable[[], float] = time.perf_counter,
    copy: CopyFn = ctypes.memmove,
) -> HostCopyResult:
    """Measure one thread's copy rate between two buffers larger than the LLC (see the module docstring).

    ``size_bytes`` defaults to ``buffer_bytes``; ``node`` to the first NUMA
    node; ``copy(dst_address, src_address, n)`` to ``ctypes.memmove``.
    """
    llc = llc_bytes()
    if size_bytes is None:
        size_bytes = buffer_bytes(llc, mem_available_bytes())
    if size_bytes <= 0:
        msg = f"buffer size must be > 0 bytes (got {size_bytes})"
        raise ValueError(msg)
    if node is None:
        nodes = [n for n in numa_nodes() if n.cpus]
        node = nodes[0] if nodes else None
    with bind_to_numa(node) as cpus:
        src = np.empty(size_bytes, dtype=np.uint8)
        dst = np.empty(size_bytes, dtype=np.uint8)
        src.fill(1)  # first touch from the bound thread: the pages land on its node
        dst.fill(0)
        s_addr, d_addr = src.ctypes.data, dst.ctypes.data

        def one() -> float:
            t0 = clock()
            copy(d_addr, s_addr, size_bytes)
            return clock() - t0

        rep = repeat_until_budget(one, budget, clock=clock)
    median = summarize(rep.samples_s).median_s
    if not median > 0:
        msg = f"the copy of {size_bytes} B took no measurable time (median {median!r} s)"
        raise HostCopyError(msg)
    return HostCopyResult(size_bytes / median, size_bytes, rep.samples_s, llc, tuple(cpus), rep.stopped_by)


def _cpus(cpus: tuple[int, ...]) -> str:
    from nodecast.calibrate.host import _cpulist_text

    return _cpulist_text(cpus)
