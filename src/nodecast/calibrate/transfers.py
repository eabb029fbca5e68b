"""The transfer families on a GPU: explicit copies, duplex, peer, zero-copy, unified memory.

How each family measures (Comm|Scope sections 3.2-3.4, ../shared/reference/MEASUREMENT.md):

* **Asynchronous work is timed with CUDA events** on the stream that runs
  it (``cudaEventRecord`` before and after, ``cudaEventSynchronize``,
  ``cudaEventElapsedTime``), never with host clocks around a
  synchronization. Where the work is host-synchronous (a CPU thread
  touching managed pages) or spans two GPUs whose events cannot be compared
  (GPU-GPU duplex), the host clock is used, as Comm|Scope does, and the
  benchmark's label says so.
* **The gate** (nvbandwidth's spin kernel): for asynchronous copies and
  kernels, a one-thread kernel spinning on a flag in mapped pinned memory
  holds the stream while the start event, the work and the stop event are
  queued; the host then raises the flag. The events then bracket only the
  GPU's execution, not the time the host took to enqueue the call. The spin
  kernel gives up after ``transfer_kernels.GATE_TIMEOUT_S`` and says so (the point fails
  rather than silently timing the enqueue). Pageable copies, copies between
  GPUs without peer access and prefetches are not gated: their API calls can
  wait on the stream (staging through the driver's pinned buffers), which a
  held stream would deadlock.
* **Duplex**: one stream per direction; both streams wait on one event so
  they start together; time = last stop - first start, all events on one GPU.
* **Cache flush**: before every repetition of a ``_flush`` case,
  ``host.CacheFlusher`` evicts the host buffer (see ``host``).
* **NUMA**: host cases run with the thread bound to their NUMA node
  (``host.bind_to_numa``) from allocation to release; the placement of the
  host buffer is read back from numa_maps and written in the label.

NOTE: this module has not run on a GPU yet (see docs/calibrate.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nodecast.calibrate import gpu_peaks, host
from nodecast.calibrate.cuda import Cuda, PageableBuffer, host_view
from nodecast.calibrate.plan import Case, GPUInfo, Topology
from nodecast.calibrate.run import MeasureError, Point
from nodecast.calibrate.transfer_kernels import TRANSFER_SOURCE, ZC_BLOCK, ZC_GRID, Gate

#: Most CPU threads the multi-threaded demand benchmark uses.
MAX_HOST_THREADS = 32


@dataclass
class HostMemory:
    """A host buffer for one point: its address (host and device view), a numpy view, and where its pages are."""

    address: int
    device_address: int
    view: np.ndarray
    placement: str = ""


@dataclass
class CudaMeasurer:
    """Prepares points of every family on the GPUs of a session (``nodecast.calibrate.Measurer``)."""

    cuda: Cuda
    topology: Topology
    gate_enabled: bool = True
    _gates: dict[int, Gate] = field(default_factory=dict)
    _flushers: dict[int | None, host.CacheFlusher] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    # -- the Measurer protocol -------------------------------------------------------
    def prepare(self, case: Case, size_bytes: int) -> Point:
        """Allocate, bind and set up one point; MeasureError when anything fails."""
        stack = contextlib.ExitStack()
        try:
            node = self._node(case.numa)
            stack.enter_context(host.bind_to_numa(node))
            point = _OPS[case.family.op](self, case, size_bytes, stack)
        except MeasureError:
            self._close(stack)
            raise
        except Exception as exc:  # noqa: BLE001 - untested GPU code: one broken family must not end the run
            self._close(stack)
            raise MeasureError(f"{type(exc).__name__}: {exc} (nodecast bug in GPU code not yet run on a GPU)") from exc
        rep = point.rep

        def guarded() -> float:
            try:
                return rep()
            except MeasureError:
                raise
            except Exception as exc:  # noqa: BLE001 - as above
                raise MeasureError(f"{type(exc).__name__}: {exc} (nodecast bug in GPU code not yet run on a GPU)") from exc

        point.rep = guarded
        point.release = lambda: self._close(stack)
        return point

    def close(self) -> None:
        """Free the gates."""
        for gate in self._gates.values():
            with contextlib.suppress(Exception):
                gate.close()
        self._gates.clear()
        self._flushers.clear()

    # -- helpers ------------------------------------------------------------------------
    def _close(self, stack: contextlib.ExitStack) -> None:
        try:
            stack.close()
        except Exception as exc:  # noqa: BLE001 - a failed free must not hide the measurement
            self.warnings.append(f"cleanup failed: {type(exc).__name__}: {exc}")

    def _node(self, numa: int | None) -> host.NumaNode | None:
        if numa is None:
            return None
        return next((n for n in self.topology.numa_nodes if n.id == numa), None)

    def gate(self, device: int) -> Gate | None:
        """The gate of ``device``; None when gating is off or the gate cannot be built (then gating is
        switched off for the rest of the run, with a warning: copies need no kernel, the gate does)."""
        if not self.gate_enabled:
            return None
        if device not in self._gates:
            try:
                self._gates[device] = Gate(self.cuda, device)
            except MeasureError as exc:
                self.gate_enabled = False
                self.warnings.append(f"gate kernel unavailable, nothing is gated from here on: {exc}")
                return None
        return self._gates[device]

    def flusher(self, numa: int | None) -> host.CacheFlusher:
        """The cache flusher of a NUMA node, created (and first touched) by the thread bound to it."""
        if numa not in self._flushers:
            f = host.CacheFlusher.for_this_host()
            f.flush()
            self._flushers[numa] = f
        return self._flushers[numa]

    def gpu(self, index: int) -> GPUInfo:
        """The topology's entry for GPU ``index``."""
        return self.topology.gpus[index]

    def host_memory(self, kind: str, n: int, case: Case, stack: contextlib.ExitStack) -> HostMemory:
        """Allocate and touch ``n`` bytes of host memory of ``kind`` from the bound thread."""
        cuda = self.cuda
        if kind in ("pageable", "registered"):
            buf = PageableBuffer(n)
            stack.callback(buf.close)
            buf.touch()
            dev = 0
            if kind == "registered":
                cuda.host_register(buf.address, buf.mapped_bytes)
                stack.callback(cuda.host_unregister, buf.address)
            mem = HostMemory(buf.address, dev, buf.array)
        elif kind in ("hostalloc", "mapped"):
            ptr = cuda.host_alloc(n, mapped=kind == "mapped")
            stack.callback(cuda.free_host, ptr)
            view = host_view(ptr, max(n, 1))
            view.fill(1)
            dev = cuda.device_pointer(ptr) if kind == "mapped" else 0
            mem = HostMemory(ptr, dev, view)
        else:
            msg = f"unknown host memory kind {kind!r}"
            raise MeasureError(msg)
        mem.placement = host.placement_text(host.numa_placement(mem.address), case.numa)
        return mem

    def timed(self, s: Any, e0: Any, e1: Any, enqueue: Callable[[], None], gate: Gate | None) -> float:
        """One event-timed repetition of ``enqueue`` on stream ``s``, held by ``gate`` while queued."""
        cuda = self.cuda
        if gate is not None:
            gate.hold(s)
        try:
            cuda.record(e0, s)
            enqueue()
            cuda.record(e1, s)
        finally:
            if gate is not None:
                gate.open()  # also when queueing failed: never leave the spin kernel holding the GPU
        cuda.sync_event(e1)
        if gate is not None:
            gate.check()
        return cuda.elapsed_s(e0, e1)


# -- the families ---------------------------------------------------------------------------


def _stream_events(cuda: Cuda, stack: contextlib.ExitStack, count: int = 2) -> tuple[Any, list[Any]]:
    s = cuda.stream()
    stack.callback(cuda.destroy_stream, s)
    events = []
    for _ in range(count):
        e = cuda.event()
        stack.callback(cuda.destroy_event, e)
        events.append(e)
    return s, events


def _device_buffer(cuda: Cuda, n: int, stack: contextlib.ExitStack, value: int = 1) -> int:
    d = cuda.malloc(n)
    stack.callback(cuda.free, d)
    cuda.memset(d, value, max(n, 1))
    return d


def _flush_fn(m: CudaMeasurer, case: Case) -> Callable[[], None]:
    if not case.flush:
        return lambda: None
    return m.flusher(case.numa).flush


def _to_gpu(case: Case) -> bool:
    return case.family.key.endswith("ToGPU")


def op_memcpy(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """cudaMemcpyAsync between host memory (pageable, registered or cudaHostAlloc) and one GPU."""
    cuda = m.cuda
    cuda.set_device(case.gpu)
    mem = m.host_memory(case.family.host_mem, n, case, stack)  # type: ignore[arg-type]
    cuda.set_device(case.gpu)
    d = _device_buffer(cuda, n, stack)
    s, (e0, e1) = _stream_events(cuda, stack)
    htod = _to_gpu(case)
    src, dst, kind = (mem.address, d, "htod") if htod else (d, mem.address, "dtoh")
    gate = m.gate(case.gpu) if case.family.host_mem != "pageable" else None
    flush = _flush_fn(m, case)

    def rep() -> float:
        flush()
        return m.timed(s, e0, e1, lambda: cuda.memcpy_async(dst, src, n, kind, s), gate)

    return Point(rep, float(n), label=_label(mem.placement, gate))


def op_memcpy_duplex(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """Host -> GPU and GPU -> host at once on two streams of one GPU; first start to last stop."""
    cuda = m.cuda
    cuda.set_device(case.gpu)
    kind = case.family.host_mem
    up = m.host_memory(kind, n, case, stack)  # type: ignore[arg-type]
    down = m.host_memory(kind, n, case, stack)  # type: ignore[arg-type]
    cuda.set_device(case.gpu)
    d_up, d_down = _device_buffer(cuda, n, stack), _device_buffer(cuda, n, stack)
    s1, (zero, a0, a1) = _stream_events(cuda, stack, 3)
    s2, (b0, b1) = _stream_events(cuda, stack, 2)
    gate = m.gate(case.gpu) if kind != "pageable" else None
    flush = _flush_fn(m, case)

    def rep() -> float:
        flush()
        if gate is not None:
            gate.hold(s1)
        try:
            cuda.record(zero, s1)
            cuda.wait_event(s2, zero)
            cuda.record(a0, s1)
            cuda.record(b0, s2)
            cuda.memcpy_async(d_up, up.address, n, "htod", s1)
            cuda.memcpy_async(down.address, d_down, n, "dtoh", s2)
            cuda.record(a1, s1)
            cuda.record(b1, s2)
        finally:
            if gate is not None:
                gate.open()
        cuda.sync_event(a1)
        cuda.sync_event(b1)
        if gate is not None:
            gate.check()
        starts = (cuda.elapsed_s(zero, a0), cuda.elapsed_s(zero, b0))
        stops = (cuda.elapsed_s(zero, a1), cuda.elapsed_s(zero, b1))
        return max(stops) - min(starts)

    return Point(rep, float(2 * n), label=_label(f"{up.placement} / {down.placement}", gate))


def op_memcpy_dtod(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """cudaMemcpyAsync device -> device within one GPU."""
    cuda = m.cuda
    cuda.set_device(case.gpu)
    src, dst = _device_buffer(cuda, n, stack), _device_buffer(cuda, n, stack, 0)
    s, (e0, e1) = _stream_events(cuda, stack)
    gate = m.gate(case.gpu)

    def rep() -> float:
        return m.timed(s, e0, e1, lambda: cuda.memcpy_async(dst, src, n, "dtod", s), gate)

    return Point(rep, float(n), label=_label("", gate))


def _peer_state(m: CudaMeasurer, a: int, b: int, enabled: bool, stack: contextlib.ExitStack) -> None:
    cuda = m.cuda
    if (a, b) in m.topology.peer:
        cuda.set_peer(a, b, enabled)
        if enabled:
            stack.callback(cuda.set_peer, a, b, False)
    if (b, a) in m.topology.peer:
        cuda.set_peer(b, a, enabled)
        if enabled:
            stack.callback(cuda.set_peer, b, a, False)


def op_memcpy_peer(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """cudaMemcpyAsync from GPU ``gpu`` to GPU ``gpu2``, peer access enabled or disabled as the family says."""
    cuda = m.cuda
    a, b = case.gpu, case.gpu2
    assert b is not None  # noqa: S101 - pair families always have a second GPU
    peer = bool(case.family.peer)
    _peer_state(m, a, b, peer, stack)
    cuda.set_device(b)
    dst = _device_buffer(cuda, n, stack, 0)
    cuda.set_device(a)
    src = _device_buffer(cuda, n, stack)
    s, (e0, e1) = _stream_events(cuda, stack)
    gate = m.gate(a) if peer else None

    def rep() -> float:
        return m.timed(s, e0, e1, lambda: cuda.memcpy_async(dst, src, n, "default", s), gate)

    return Point(rep, float(n), label=_label("peer access " + ("enabled" if peer else "disabled"), gate))


def op_memcpy_peer_duplex(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """Both directions between two GPUs at once, one stream on each GPU; host clock (events of two GPUs do not compare)."""
    cuda = m.cuda
    a, b = case.gpu, case.gpu2
    assert b is not None  # noqa: S101
    _peer_state(m, a, b, bool(case.family.peer), stack)
    cuda.set_device(a)
    a_src, a_dst = _device_buffer(cuda, n, stack), _device_buffer(cuda, n, stack, 0)
    sa, _ = _stream_events(cuda, stack, 0)
    cuda.set_device(b)
    b_src, b_dst = _device_buffer(cuda, n, stack), _device_buffer(cuda, n, stack, 0)
    sb, _ = _stream_events(cuda, stack, 0)

    def rep() -> float:
        cuda.sync_stream(sa)
        cuda.sync_stream(sb)
        t0 = time.perf_counter()
        cuda.set_device(a)
        cuda.memcpy_async(b_dst, a_src, n, "default", sa)
        cuda.set_device(b)
        cuda.memcpy_async(a_dst, b_src, n, "default", sb)
        cuda.sync_stream(sa)
        cuda.sync_stream(sb)
        return time.perf_counter() - t0

    peer = "enabled" if case.family.peer else "disabled"
    return Point(rep, float(2 * n), label=f"host clock (includes enqueue and synchronization); peer access {peer}")


def op_zerocopy(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """A 256x256-thread kernel reads (HostToGPU) or writes (GPUToHost) 4-byte words of mapped pinned memory."""
    cuda = m.cuda
    cuda.set_device(case.gpu)
    words = n // 4
    mem = m.host_memory("mapped", words * 4, case, stack)
    module = cuda.module(case.gpu, TRANSFER_SOURCE)
    cuda.set_device(case.gpu)
    s, (e0, e1) = _stream_events(cuda, stack)
    gate = m.gate(case.gpu)
    flush = _flush_fn(m, case)
    if case.family.op == "zerocopy_read":
        sink = _device_buffer(cuda, 4, stack, 0)
        fn, args = module.fn("nc_zc_read"), [("ptr", mem.device_address), ("u64", words), ("ptr", sink)]
    else:
        fn, args = module.fn("nc_zc_write"), [("ptr", mem.device_address), ("u64", words), ("u32", 0)]

    def rep() -> float:
        flush()
        return m.timed(s, e0, e1, lambda: cuda.launch(fn, ZC_GRID, ZC_BLOCK, args, s), gate)

    return Point(rep, float(words * 4), label=_label(mem.placement, gate))


def _managed(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> tuple[int, Any, list[Any]]:
    cuda = m.cuda
    cuda.set_device(case.gpu)
    ptr = cuda.malloc_managed(n)
    stack.callback(cuda.free, ptr)
    cuda.memset(ptr, 0, n)
    cuda.sync_device()
    s, events = _stream_events(cuda, stack)
    return ptr, s, events


def op_um_demand_htod(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """Managed pages on the host; one warp per page writes one byte on the GPU (demand migration), CUDA events."""
    cuda = m.cuda
    ptr, s, (e0, e1) = _managed(m, case, n, stack)
    fn = cuda.module(case.gpu, TRANSFER_SOURCE).fn("nc_um_touch")
    cuda.set_device(case.gpu)
    gate = m.gate(case.gpu)
    flush = _flush_fn(m, case)
    page = m.topology.page_bytes
    args = [("ptr", ptr), ("u64", n), ("u64", page)]

    def rep() -> float:
        cuda.prefetch(ptr, n, None, s)
        cuda.sync_stream(s)
        flush()
        return m.timed(s, e0, e1, lambda: cuda.launch(fn, ZC_GRID, ZC_BLOCK, args, s), gate)

    return Point(rep, float(n), label=_label(f"one byte per {page} B page", gate))


def op_um_demand_dtoh(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """Managed pages on the GPU; CPU threads write one byte per page (host clock)."""
    cuda = m.cuda
    ptr, s, _ = _managed(m, case, n, stack)
    page = m.topology.page_bytes
    view = host_view(ptr, n)
    pages = max(1, -(-n // page))
    threads = 1
    if case.family.op == "um_demand_dtoh_mt":
        node = m._node(case.numa)
        cpus = len(node.cpus) if node is not None and node.cpus else 1
        threads = max(1, min(cpus, MAX_HOST_THREADS, pages))
    bounds = [(pages * i // threads, pages * (i + 1) // threads) for i in range(threads)]
    # Worker threads start at the first submit, inside a repetition, while this thread is still bound to the
    # case's NUMA node: Linux threads inherit the affinity of the thread that creates them.
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    if pool is not None:
        stack.callback(pool.shutdown)
    flush = _flush_fn(m, case)

    def touch(lo: int, hi: int) -> None:
        view[lo * page : hi * page : page] = 0

    def rep() -> float:
        cuda.set_device(case.gpu)
        cuda.prefetch(ptr, n, case.gpu, s)
        cuda.sync_stream(s)
        flush()
        t0 = time.perf_counter()
        if pool is None:
            touch(0, pages)
        else:
            for f in [pool.submit(touch, lo, hi) for lo, hi in bounds]:
                f.result()
        return time.perf_counter() - t0

    return Point(rep, float(n), label=f"host clock; {threads} CPU thread{'s' if threads > 1 else ''}, one byte per {page} B page")


def op_um_prefetch(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """cudaMemPrefetchAsync of managed memory host -> GPU or GPU -> host, CUDA events (not gated)."""
    cuda = m.cuda
    ptr, s, (e0, e1) = _managed(m, case, n, stack)
    to_gpu = case.family.op == "um_prefetch_htod"
    flush = _flush_fn(m, case)

    def rep() -> float:
        cuda.set_device(case.gpu)
        cuda.prefetch(ptr, n, None if to_gpu else case.gpu, s)  # start where the copy starts
        cuda.sync_stream(s)
        flush()
        return m.timed(s, e0, e1, lambda: cuda.prefetch(ptr, n, case.gpu if to_gpu else None, s), None)

    return Point(rep, float(n), label="not gated (prefetch calls may wait on the stream)")


def op_peak(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """A compute-peak point (``gpu_peaks.prepare_peak``)."""
    return gpu_peaks.prepare_peak(m.cuda, case, stack)


def op_level(m: CudaMeasurer, case: Case, n: int, stack: contextlib.ExitStack) -> Point:
    """A per-level bandwidth point (``gpu_peaks.prepare_level``)."""
    return gpu_peaks.prepare_level(m.cuda, case, stack)


def _label(text: str, gate: Gate | None) -> str:
    parts = [p for p in (f"host pages {text}" if text and "N" in text else text,
                         "gated" if gate is not None else "not gated") if p]
    return "; ".join(parts)


_OPS: dict[str, Callable[[CudaMeasurer, Case, int, contextlib.ExitStack], Point]] = {
    "memcpy": op_memcpy,
    "memcpy_duplex": op_memcpy_duplex,
    "memcpy_dtod": op_memcpy_dtod,
    "memcpy_peer": op_memcpy_peer,
    "memcpy_peer_duplex": op_memcpy_peer_duplex,
    "zerocopy_read": op_zerocopy,
    "zerocopy_write": op_zerocopy,
    "um_demand_htod": op_um_demand_htod,
    "um_demand_dtoh": op_um_demand_dtoh,
    "um_demand_dtoh_mt": op_um_demand_dtoh,
    "um_prefetch_htod": op_um_prefetch,
    "um_prefetch_dtoh": op_um_prefetch,
    "peak_fma": op_peak,
    "peak_addmul": op_peak,
    "level": op_level,
}
