"""The GPU layer without a GPU: clear errors, result checking, host buffers, API names against cuda-python."""

from __future__ import annotations

import enum
import sys

import numpy as np
import pytest

from nodecast.calibrate import MeasureError, open_session, transfers
from nodecast.calibrate import cuda as C
from nodecast.calibrate import plan as P
from nodecast.errors import GPUUnavailableError


def test_no_gpu_here_is_a_clear_error():
    """On this machine (no NVIDIA driver) opening a session raises GPUUnavailableError with what to do."""
    with pytest.raises(GPUUnavailableError) as info:
        open_session()
    msg = info.value.message
    assert "\n" not in msg
    assert "pip install '.[gpu]'" in msg or "CUDA driver" in msg or "CUDA device" in msg


def test_missing_cuda_python_says_how_to_install(monkeypatch):
    """Without cuda-python the error names the package and the pip command."""
    for name in ("cuda", "cuda.bindings", "cuda.cudart"):
        monkeypatch.setitem(sys.modules, name, None)  # import of these now fails
    with pytest.raises(GPUUnavailableError, match=r"cuda-python is not installed\. .*pip install '\.\[gpu\]'"):
        C.load_bindings()


class Err(enum.IntEnum):
    """A stand-in for cuda-python's error enums."""

    cudaSuccess = 0
    cudaErrorMemoryAllocation = 2
    cudaErrorInvalidValue = 1


def test_check_unpacks_results():
    """(success,) -> None; (success, v) -> v; (success, a, b) -> (a, b)."""
    assert C.check((Err.cudaSuccess,), "f") is None
    assert C.check((Err.cudaSuccess, 7), "f") == 7
    assert C.check((Err.cudaSuccess, 1, 2), "f") == (1, 2)
    assert C.check(Err.cudaSuccess, "f") is None


def test_check_raises_with_the_call_and_error_name():
    """A failure names the call and the error; allocation failures are flagged as out of memory."""
    with pytest.raises(MeasureError, match=r"cudaMalloc\(8\) failed: cudaErrorInvalidValue \(1\)") as info:
        C.check((Err.cudaErrorInvalidValue, None), "cudaMalloc(8)")
    assert not info.value.out_of_memory
    with pytest.raises(MeasureError) as info:
        C.check((Err.cudaErrorMemoryAllocation, None), "cudaMalloc(1)")
    assert info.value.out_of_memory


def test_pageable_buffer_is_page_aligned_and_touched():
    """A pageable buffer starts on a page, spans whole pages, and touch() writes every byte."""
    import mmap

    buf = C.PageableBuffer(10_000)
    assert buf.address % mmap.PAGESIZE == 0 and buf.mapped_bytes % mmap.PAGESIZE == 0
    buf.touch(3)
    assert buf.array.size == 10_000 and np.all(buf.array == 3)
    buf.close()


def test_host_view_reads_raw_memory():
    """host_view sees the bytes at an address without copying."""
    a = np.arange(16, dtype=np.uint8)
    v = C.host_view(a.ctypes.data, 16, np.uint32)
    assert v.size == 4 and v[0] == int.from_bytes(bytes([0, 1, 2, 3]), "little")


def test_every_family_has_measuring_code():
    """Each family's op has a function in the GPU layer."""
    assert {f.op for f in P.FAMILIES} <= set(transfers._OPS)


def test_transfer_kernels_are_comm_scope_shaped():
    """Zero-copy kernels use 4-byte words; the demand kernel writes one byte per page from lane 0 of each warp."""
    src = transfers.TRANSFER_SOURCE
    for name in ("nc_gate", "nc_zc_read", "nc_zc_write", "nc_um_touch"):
        assert f'extern "C" __global__ void {name}(' in src
    assert "threadIdx.x % 32 == 0" in src and "off += warps * page" in src
    assert (transfers.ZC_GRID, transfers.ZC_BLOCK) == (256, 256)


# -- the API cuda-python must offer (checked only where cuda-python is installed) -------------------

RUNTIME_CALLS = (
    "cudaGetDeviceCount", "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetDeviceProperties",
    "cudaDeviceGetAttribute", "cudaSetDevice", "cudaMemGetInfo", "cudaDeviceSynchronize", "cudaMalloc", "cudaFree",
    "cudaMemset", "cudaHostAlloc", "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister", "cudaHostGetDevicePointer",
    "cudaMallocManaged", "cudaMemPrefetchAsync", "cudaStreamCreateWithFlags", "cudaStreamDestroy",
    "cudaStreamSynchronize", "cudaEventCreate", "cudaEventDestroy", "cudaEventRecord", "cudaStreamWaitEvent",
    "cudaEventSynchronize", "cudaEventElapsedTime", "cudaMemcpyAsync", "cudaDeviceCanAccessPeer",
    "cudaDeviceEnablePeerAccess", "cudaDeviceDisablePeerAccess", "cudaGetLastError",
)
RUNTIME_CONSTANTS = ("cudaHostAllocPortable", "cudaHostAllocMapped", "cudaHostRegisterPortable",
                     "cudaHostRegisterMapped", "cudaMemAttachGlobal", "cudaStreamNonBlocking", "cudaCpuDeviceId")
DEVICE_PROPS = ("name", "major", "minor", "totalGlobalMem", "multiProcessorCount", "l2CacheSize", "pciDomainID",
                "pciBusID", "pciDeviceID", "canMapHostMemory", "managedMemory", "concurrentManagedAccess",
                "maxThreadsPerMultiProcessor")


def test_cuda_python_has_every_call_used():
    """Every runtime/driver/NVRTC function, constant and property the layer uses exists in the installed cuda-python."""
    b = _bindings()
    missing = [n for n in RUNTIME_CALLS + RUNTIME_CONSTANTS if not hasattr(b.runtime, n)]
    missing += [n for n in ("cuInit", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel") if not hasattr(b.driver, n)]
    missing += [n for n in ("nvrtcGetSupportedArchs", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                            "nvrtcGetProgramLog", "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
                            "nvrtcDestroyProgram")
                if not hasattr(b.nvrtc, n)]
    assert missing == []
    props = b.runtime.cudaDeviceProp()
    assert [p for p in DEVICE_PROPS if not hasattr(props, p)] == []
    kinds = b.runtime.cudaMemcpyKind
    assert all(hasattr(kinds, k) for k in ("cudaMemcpyHostToDevice", "cudaMemcpyDeviceToHost",
                                           "cudaMemcpyDeviceToDevice", "cudaMemcpyDefault"))
    assert hasattr(b.runtime.cudaDeviceAttr, "cudaDevAttrClockRate")


def test_prefetch_takes_the_installed_form():
    """The prefetch call matches the installed signature (a cudaMemLocation since CUDA 13, a device before)."""
    b = _bindings()
    first_line = (b.runtime.cudaMemPrefetchAsync.__doc__ or "").split("\n", 1)[0]
    if "location" in first_line or hasattr(b.runtime, "cudaMemPrefetchAsync_v2"):
        loc = b.runtime.cudaMemLocation()
        loc.type = b.runtime.cudaMemLocationType.cudaMemLocationTypeHost
        loc.id = 0
    else:
        assert "dstDevice" in first_line


def _bindings() -> C.Bindings:
    """cuda-python's modules, or a skip where it is not installed."""
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed here")
    return C.load_bindings()
