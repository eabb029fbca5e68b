"""The kernels the transfer families launch, and the gate built on one of them (GPU).

``TRANSFER_SOURCE`` is compiled with NVRTC (``nodecast.calibrate.cuda``): the
gate's spin kernel, Comm|Scope's zero-copy read and write kernels, and the
unified-memory kernel that touches one byte per page. ``Gate`` is nvbandwidth's
spin kernel on one GPU: it holds a stream while the timed work is queued (see
``nodecast.calibrate.transfers``, which measures with it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodecast.calibrate.cuda import Cuda, host_view
from nodecast.calibrate.run import MeasureError

#: The gate kernel gives up after this long (seconds) and the point fails.
GATE_TIMEOUT_S = 5.0
#: Comm|Scope's zero-copy and unified-memory kernels: 256 blocks of 256 threads.
ZC_GRID = 256
ZC_BLOCK = 256

#: The transfer kernels.
TRANSFER_SOURCE = r"""
extern "C" __global__ void nc_gate(volatile unsigned int* flag, long long max_cycles)
{
    const long long t0 = clock64();
    while (flag[0] == 0u) {
        if (clock64() - t0 > max_cycles) { flag[1] = 1u; return; }
    }
}

extern "C" __global__ void nc_zc_read(const unsigned int* src, unsigned long long n_words, unsigned int* sink)
{
    unsigned int acc = 0u;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += stride)
        acc ^= src[i];
    if (acc == 0xFFFFFFFFu) sink[0] = acc;
}

extern "C" __global__ void nc_zc_write(unsigned int* dst, unsigned long long n_words, unsigned int value)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += stride)
        dst[i] = value;
}

extern "C" __global__ void nc_um_touch(unsigned char* p, unsigned long long n_bytes, unsigned long long page)
{
    const unsigned long long warp = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned long long warps = ((unsigned long long)gridDim.x * blockDim.x) / 32;
    if (threadIdx.x % 32 == 0)
        for (unsigned long long off = warp * page; off < n_bytes; off += warps * page) p[off] = 0;
}
"""


class Gate:
    """nvbandwidth's spin kernel on one GPU (see ``nodecast.calibrate.transfers``' module docstring)."""

    def __init__(self, cuda: Cuda, device: int) -> None:
        self.cuda = cuda
        cuda.set_device(device)
        self.ptr = cuda.host_alloc(8, mapped=True)
        self.dptr = cuda.device_pointer(self.ptr)
        self.words = host_view(self.ptr, 8, np.uint32)
        self.fn = cuda.module(device, TRANSFER_SOURCE).fn("nc_gate")
        self.max_cycles = int(cuda.devices[device].clock_khz * 1e3 * GATE_TIMEOUT_S)

    def hold(self, s: Any) -> None:
        """Queue the spin kernel on stream ``s``."""
        self.words[:] = 0
        self.cuda.launch(self.fn, 1, 1, [("ptr", self.dptr), ("i64", self.max_cycles)], s)

    def open(self) -> None:
        """Let the held stream go."""
        self.words[0] = 1

    def check(self) -> None:
        """MeasureError when the spin kernel gave up waiting (after the stream synchronized)."""
        if self.words[1]:
            msg = f"the gate kernel timed out after {GATE_TIMEOUT_S:g} s: queueing the work took that long"
            raise MeasureError(msg)

    def close(self) -> None:
        """Free the flag."""
        self.words = np.zeros(2, np.uint32)
        self.cuda.free_host(self.ptr)
