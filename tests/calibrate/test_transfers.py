"""The GPU measuring code's control flow, run against a stand-in for the cuda layer (no GPU).

``FakeCuda`` offers the methods of ``nodecast.calibrate.cuda.Cuda``: host
allocations are real memory (so host views, touches, flushes and the gate's
flag work), device calls are recorded, events time 1 us. This checks that
every family's code runs, queues its work in the right order, frees what it
allocates and restores thread affinity - not that CUDA accepts the calls
(see test_cuda.py for the API names, and docs/calibrate.md for what has not
run on a GPU).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from nodecast.calibrate import MeasureError, run_plan
from nodecast.calibrate import plan as P
from nodecast.calibrate import transfers as T
from nodecast.calibrate.cuda import DeviceProps


class FakeCuda:
    """Records calls; host memory is real numpy memory, device memory is fake addresses."""

    def __init__(self, n_gpus: int = 2) -> None:
        self.devices = [DeviceProps(i, "Fake", (9, 0), 80 << 30, 132, 50 << 20, f"0000:{i:02x}:00.0", True, True, True,
                                    2048, 1_700_000) for i in range(n_gpus)]
        self.calls: list[tuple] = []
        self.host: dict[int, np.ndarray] = {}
        self.device_live: set[int] = set()
        self.host_live: set[int] = set()
        self.registered: set[int] = set()
        self.peer: set[tuple[int, int]] = set()
        self.current = 0
        self._next = 1 << 40
        self.fail_on: str | None = None

    def _call(self, *c):
        self.calls.append(c)
        if self.fail_on and c[0] == self.fail_on:
            raise MeasureError(f"{c[0]} failed: cudaErrorInvalidValue (1)")

    def set_device(self, i):
        self.current = i

    def mem_info(self, i):
        return 70 << 30, 80 << 30

    def sync_device(self):
        self._call("sync_device")

    def malloc(self, n):
        self._call("malloc", n)
        self._next += max(n, 1) + 4096
        self.device_live.add(self._next)
        return self._next

    def free(self, p):
        self._call("free", p)
        if p in self.host:  # managed memory lives in host memory here
            del self.host[p]
        else:
            self.device_live.remove(p)

    def memset(self, p, v, n):
        self._call("memset", p, v, n)

    def _host(self, n):
        a = np.zeros(max(n, 1) + 64, dtype=np.uint8)
        addr = a.ctypes.data
        self.host[addr] = a
        return addr

    def host_alloc(self, n, *, mapped=False):
        self._call("host_alloc", n, mapped)
        addr = self._host(n)
        self.host_live.add(addr)
        return addr

    def free_host(self, p):
        self._call("free_host", p)
        self.host_live.remove(p)

    def host_register(self, addr, n, *, mapped=False):
        self._call("host_register", n)
        self.registered.add(addr)

    def host_unregister(self, addr):
        self._call("host_unregister")
        self.registered.remove(addr)

    def device_pointer(self, p):
        return p

    def malloc_managed(self, n):
        self._call("malloc_managed", n)
        addr = self._host(n)
        return addr

    def prefetch(self, ptr, n, device, s):
        self._call("prefetch", device)

    def stream(self):
        self._call("stream")
        return ("stream", len(self.calls))

    def destroy_stream(self, s):
        self._call("destroy_stream")

    def sync_stream(self, s):
        self._call("sync_stream")

    def event(self):
        self._call("event")
        return ("event", len(self.calls))

    def destroy_event(self, e):
        self._call("destroy_event")

    def record(self, e, s):
        self._call("record")

    def wait_event(self, s, e):
        self._call("wait_event")

    def sync_event(self, e):
        self._call("sync_event")

    def elapsed_s(self, a, b):
        return 1e-6

    def memcpy_async(self, dst, src, n, kind, s):
        self._call("memcpy", kind, n)

    def can_access_peer(self, a, b):
        return True

    def set_peer(self, a, b, enabled):
        self._call("set_peer", a, b, enabled)
        (self.peer.add if enabled else self.peer.discard)((a, b))

    def target(self, device):
        return ("sm", 90)

    def arch(self, device):
        return 90

    def module(self, device, source, options=()):
        return FakeModule()

    def launch(self, fn, grid, block, args, s, shared_bytes=0):
        self._call("launch", fn, grid, block)


class FakeModule:
    """A module whose functions are their names."""

    def fn(self, name):
        return name


def fake_topology(n_gpus: int = 2) -> P.Topology:
    """Two GPUs on one NUMA node made of this process's allowed CPUs."""
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    gpus = tuple(P.GPUInfo(i, "Fake", (9, 0), 80 << 30, 70 << 30, 132, 50 << 20, f"0000:{i:02x}:00.0", 0)
                 for i in range(n_gpus))
    return P.Topology(gpus, (P.NumaNode(0, cpus, 1 << 30),), frozenset({(0, 1), (1, 0)}), 64 << 30, 4096)


@pytest.fixture
def small_plan(fakes):
    """Every family at sizes up to 16 KiB, tiny budget."""
    return P.build_plan(fake_topology(), P.Options(max_bytes=16 << 10, budget=fakes.TINY))


def test_every_family_runs_and_frees_everything(small_plan, monkeypatch):
    """All points of all families measure; device, pinned and registered memory is all freed; affinity is restored."""
    from nodecast.calibrate import host

    monkeypatch.setattr(host.CacheFlusher, "for_this_host", classmethod(lambda cls, root=None: cls(1 << 16)))
    cuda = FakeCuda()
    m = T.CudaMeasurer(cuda, fake_topology())  # the node small_plan was built on
    before = os.sched_getaffinity(0)
    results = run_plan(small_plan, m)
    m.close()
    bad = [(r.name, r.error) for r in results if not r.ok]
    assert bad == []
    assert cuda.device_live == set() and cuda.host_live == set() and cuda.registered == set()
    assert os.sched_getaffinity(0) == before
    assert cuda.peer == set()  # peer access switched back off after the Peer cases
    assert m.warnings == []


def test_gated_copy_is_queued_behind_the_spin_kernel(fakes, monkeypatch):
    """A pinned copy: gate launch, start event, copy, stop event, then synchronize (host releases the gate in between)."""
    from nodecast.calibrate import host

    monkeypatch.setattr(host.CacheFlusher, "for_this_host", classmethod(lambda cls, root=None: cls(1 << 16)))
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=8, min_bytes=8, budget=fakes.TINY,
                                                    families=("cudaMemcpyAsync_PinnedToGPU",)))
    cuda = FakeCuda(1)
    m = T.CudaMeasurer(cuda, fake_topology(1))
    point = m.prepare(plan.cases[0], 8)
    cuda.calls.clear()
    assert point.rep() == 1e-6
    assert [c[0] for c in cuda.calls] == ["launch", "record", "memcpy", "record", "sync_event"]
    assert cuda.calls[0][1] == "nc_gate" and cuda.calls[2][1:] == ("htod", 8)
    assert "gated" in point.label
    point.release()


def test_pageable_copies_are_not_gated(fakes):
    """A pageable copy's enqueue may wait on the stream, so it is not held by the gate."""
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=8, min_bytes=8, budget=fakes.TINY, flush=False,
                                                    families=("cudaMemcpyAsync_GPUToHost",)))
    cuda = FakeCuda(1)
    point = T.CudaMeasurer(cuda, fake_topology(1)).prepare(plan.cases[0], 8)
    cuda.calls.clear()
    point.rep()
    assert [c[0] for c in cuda.calls] == ["record", "memcpy", "record", "sync_event"]
    assert cuda.calls[1][1] == "dtoh"
    point.release()


def test_duplex_time_is_first_start_to_last_stop(fakes):
    """Both directions are queued on two streams that wait on one event; the point counts 2n bytes."""
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=64, min_bytes=64, budget=fakes.TINY, flush=False,
                                                    families=("cudaMemcpyAsync_Duplex_Pinned",)))
    cuda = FakeCuda(1)
    point = T.CudaMeasurer(cuda, fake_topology(1)).prepare(plan.cases[0], 64)
    cuda.calls.clear()
    point.rep()
    names = [c[0] for c in cuda.calls]
    assert names.count("memcpy") == 2 and "wait_event" in names and names.index("wait_event") < names.index("memcpy")
    assert point.work == 128
    point.release()


def test_cuda_failure_in_a_repetition_is_a_measure_error(fakes):
    """A CUDA call failing inside a repetition fails that point only, as a MeasureError."""
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=8, min_bytes=8, budget=fakes.TINY, flush=False,
                                                    families=("cudaMemcpyAsync_GPUToGPU",)))
    cuda = FakeCuda(1)
    cuda.fail_on = "memcpy"
    results = run_plan(plan, T.CudaMeasurer(cuda, fake_topology(1)))
    assert results[0].error == "memcpy failed: cudaErrorInvalidValue (1)"
    assert cuda.device_live == set()


def test_unexpected_exception_in_gpu_code_is_contained(fakes):
    """A bug (a TypeError) in the GPU code fails the point with the exception named, and frees what was allocated."""
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=8, min_bytes=8, budget=fakes.TINY, flush=False,
                                                    families=("cudaMemcpyAsync_GPUToGPU",)))
    cuda = FakeCuda(1)

    def broken(*a, **k):
        raise TypeError("an argument cuda-python does not take")

    cuda.memcpy_async = broken
    results = run_plan(plan, T.CudaMeasurer(cuda, fake_topology(1)))
    assert results[0].error.startswith("TypeError: an argument cuda-python does not take")
    assert cuda.device_live == set()


def test_gate_timeout_fails_the_point():
    """A spin kernel that gave up (flag word 1 set) makes the repetition a MeasureError."""
    cuda = FakeCuda(1)
    gate = T.Gate(cuda, 0)
    gate.words[1] = 1
    with pytest.raises(MeasureError, match="gate kernel timed out"):
        gate.check()
    gate.close()


def test_um_demand_host_threads_touch_one_byte_per_page(fakes):
    """The multi-threaded demand case writes byte 0 of every page of the managed buffer from the CPU."""
    topo = fake_topology(1)
    plan = P.build_plan(topo, P.Options(max_bytes=64 << 10, min_bytes=64 << 10, budget=fakes.TINY, flush=False,
                                        families=("UM_Demand_GPUToHostMt",)))
    cuda = FakeCuda(1)
    point = T.CudaMeasurer(cuda, topo).prepare(plan.cases[0], 64 << 10)
    (addr, buf), = cuda.host.items()
    buf[:] = 7
    point.rep()
    assert np.all(buf[: 64 << 10 : 4096] == 0) and np.all(buf[1:4096] == 7)
    assert "CPU thread" in point.label
    point.release()


def test_copies_run_ungated_when_the_gate_cannot_be_built(fakes):
    """Without NVRTC the gate kernel cannot exist: copies still measure, not gated, and a warning says so once."""
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=8, min_bytes=1, budget=fakes.TINY, flush=False,
                                                    families=("cudaMemcpyAsync_PinnedToGPU",)))
    cuda = FakeCuda(1)

    def no_nvrtc(*a, **k):
        raise MeasureError("NVRTC is not available (libnvrtc.so not found)")

    cuda.module = no_nvrtc
    m = T.CudaMeasurer(cuda, fake_topology(1))
    results = run_plan(plan, m)
    assert all(r.ok and r.label.endswith("not gated") for r in results)
    assert len(m.warnings) == 1 and "NVRTC is not available" in m.warnings[0]


def test_gate_is_released_when_queueing_fails(fakes):
    """A copy call that fails after the gate kernel was queued still raises the gate's flag."""
    plan = P.build_plan(fake_topology(1), P.Options(max_bytes=8, min_bytes=8, budget=fakes.TINY, flush=False,
                                                    families=("cudaMemcpyAsync_GPUToGPU",)))
    cuda = FakeCuda(1)
    m = T.CudaMeasurer(cuda, fake_topology(1))
    point = m.prepare(plan.cases[0], 8)
    cuda.fail_on = "memcpy"
    with pytest.raises(MeasureError):
        point.rep()
    assert m._gates[0].words[0] == 1
    point.release()
