"""The GPU itself, for the roofline model: compute peaks per precision and bandwidth per memory level.

Compute peaks (``GPU_Peak_FMA_<p>``, ``GPU_Peak_AddMul_<p>``): every thread
runs ``PEAK_CHAINS`` independent dependency chains (enough to hide the
pipeline latency) of ``PEAK_UNROLL`` x ``iters`` instructions, with the whole
GPU occupied. The arithmetic is inline PTX with an explicit ``.rn``
rounding modifier: PTX never contracts such a ``mul``/``add`` into an FMA,
so the ADD/MUL kernel measures ADD and MUL and the FMA kernel FMA. FP16 and
BF16 use the packed ``f16x2``/``bf16x2`` forms (two lanes per instruction),
as the data-sheet non-tensor peaks assume. BF16 ``add``/``mul`` exist from
sm_90; on sm_8x the hardware has only the BF16 FMA, so the ADD/MUL kernel
runs FMAs by 1 (add) or plus 0 (mul) and counts 1 FLOP each - the rate an
ADD or a MUL really gets there. The operands are 1 and 0 passed at run time
(the compiler cannot fold them), so values never overflow or go subnormal.
FLOP: an FMA is 2, an ADD or MUL 1, per lane.

Per-level bandwidth (``GPU_Bandwidth_<level>``), STREAM-like read kernels:
DRAM streams ``ld.global.cg`` float4 loads over a buffer 4x the L2 (at least
256 MiB); L2 repeats ``ld.global.cg`` (cached in L2 only) over a buffer a
quarter of the L2; L1 has each block repeat ``ld.global.ca`` loads over its
own 8 KiB slice; shared memory repeats conflict-free loads (consecutive
threads, consecutive 4-byte words). Bytes counted are bytes loaded. Rates
are reported from the fastest repetition (measured maxima).

Kernel sources and work counts are pure functions (tested); the ``prepare_*``
functions touch the GPU and have not run on one yet.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodecast.calibrate.run import MeasureError, Point

if TYPE_CHECKING:
    from nodecast.calibrate.cuda import Cuda, DeviceProps
    from nodecast.calibrate.plan import Case

#: Independent dependency chains per thread.
PEAK_CHAINS = 8
#: Instructions per chain per loop iteration (unrolled).
PEAK_UNROLL = 16
#: Loop iterations of the peak kernels.
PEAK_ITERS = 2048
#: Threads per block of every kernel here.
BLOCK = 256
#: Elements per lane of the packed half types.
LANES = {"fp64": 1, "fp32": 1, "fp16": 2, "bf16": 2}

_PTX_TYPE = {"fp64": "f64", "fp32": "f32", "fp16": "f16x2", "bf16": "bf16x2"}
_C_TYPE = {"fp64": "double", "fp32": "float", "fp16": "unsigned int", "bf16": "unsigned int"}
_CONSTRAINT = {"fp64": "d", "fp32": "f", "fp16": "r", "bf16": "r"}
#: (value of 1, value of 0) as the kernel's arguments: floats, or packed bit patterns.
ONE_ZERO = {"fp64": (1.0, 0.0), "fp32": (1.0, 0.0), "fp16": (0x3C003C00, 0), "bf16": (0x3F803F80, 0)}
#: Launch argument type of b and c.
ARG_TYPE = {"fp64": "f64", "fp32": "f32", "fp16": "u32", "bf16": "u32"}


@dataclass(frozen=True)
class PeakKernel:
    """One peak kernel: its CUDA source (kernel ``nc_peak``) and FLOP per thread per loop iteration."""

    precision: str
    op: str
    source: str
    flop_per_thread_iter: int
    native: bool = True


def peak_kernel(precision: str, op: str, arch: int) -> PeakKernel:
    """The ``nc_peak`` kernel for ``precision`` (fp64/fp32/fp16/bf16) and ``op`` (fma/addmul) on ``compute_<arch>``."""
    if precision not in _PTX_TYPE or op not in ("fma", "addmul"):
        msg = f"no peak kernel for {precision}/{op}"
        raise ValueError(msg)
    t, ctype, k = _PTX_TYPE[precision], _C_TYPE[precision], _CONSTRAINT[precision]
    native = True
    lines = []
    for i in range(PEAK_CHAINS):
        if op == "fma":
            lines.append(f'asm("fma.rn.{t} %0, %0, %1, %2;" : "+{k}"(a{i}) : "{k}"(b), "{k}"(c));')
        elif precision == "bf16" and arch < 90:
            native = False  # no bf16 add/mul before sm_90: FMA by one (add) or plus zero (mul)
            lines.append(f'asm("fma.rn.{t} %0, %0, %1, %2;" : "+{k}"(a{i}) : "{k}"(b), "{k}"(c));')
        elif i % 2 == 0:
            lines.append(f'asm("mul.rn.{t} %0, %0, %1;" : "+{k}"(a{i}) : "{k}"(b));')
        else:
            lines.append(f'asm("add.rn.{t} %0, %0, %1;" : "+{k}"(a{i}) : "{k}"(c));')
    if precision in ("fp16", "bf16"):
        init = "\n".join(f"    {ctype} a{i} = b;" for i in range(PEAK_CHAINS))
        live = " ^ ".join(f"a{i}" for i in range(PEAK_CHAINS))
        test = f"({live}) == 0xFFFFFFFFu"
        sink = "unsigned int"
    else:
        init = "\n".join(f"    {ctype} a{i} = ({ctype})(threadIdx.x + {i});" for i in range(PEAK_CHAINS))
        live = " + ".join(f"a{i}" for i in range(PEAK_CHAINS))
        test = f"({live}) == ({ctype})(-1)"
        sink = ctype
    body = "\n".join(f"            {line}" for line in lines)
    source = f"""
extern "C" __global__ void nc_peak(int iters, {ctype} b, {ctype} c, {sink}* sink)
{{
{init}
    for (int i = 0; i < iters; ++i) {{
#pragma unroll
        for (int j = 0; j < {PEAK_UNROLL}; ++j) {{
{body}
        }}
    }}
    if ({test}) sink[0] = a0;
}}
"""
    flop = PEAK_UNROLL * PEAK_CHAINS * LANES[precision] * (2 if op == "fma" else 1)
    return PeakKernel(precision, op, source, flop, native)


#: The per-level read kernels (inline PTX loads: no header needed, the cache operator is explicit).
LEVEL_SOURCE = r"""
#define NC_LD4(op, p, x, y, z, w) \
    asm volatile("ld.global." op ".v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "l"(p))

extern "C" __global__ void nc_read_dram(const float* a, unsigned long long n4, int passes, float* sink)
{
    float s = 0.0f;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p) {
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        for (; i + 3 * stride < n4; i += 4 * stride) {
            float x0, y0, z0, w0, x1, y1, z1, w1, x2, y2, z2, w2, x3, y3, z3, w3;
            NC_LD4("cg", a + 4 * i, x0, y0, z0, w0);
            NC_LD4("cg", a + 4 * (i + stride), x1, y1, z1, w1);
            NC_LD4("cg", a + 4 * (i + 2 * stride), x2, y2, z2, w2);
            NC_LD4("cg", a + 4 * (i + 3 * stride), x3, y3, z3, w3);
            s += (x0 + y0 + z0 + w0) + (x1 + y1 + z1 + w1) + (x2 + y2 + z2 + w2) + (x3 + y3 + z3 + w3);
        }
        for (; i < n4; i += stride) {
            float x, y, z, w;
            NC_LD4("cg", a + 4 * i, x, y, z, w);
            s += x + y + z + w;
        }
    }
    if (s == -1.0f) sink[0] = s;
}

extern "C" __global__ void nc_read_l1(const float* a, unsigned int slice4, int passes, float* sink)
{
    float s = 0.0f;
    const float* base = a + 4ull * slice4 * blockIdx.x;
    for (int p = 0; p < passes; ++p) {
        unsigned int i = threadIdx.x;
        for (; i + blockDim.x < slice4; i += 2 * blockDim.x) {
            float x0, y0, z0, w0, x1, y1, z1, w1;
            NC_LD4("ca", base + 4 * i, x0, y0, z0, w0);
            NC_LD4("ca", base + 4 * (i + blockDim.x), x1, y1, z1, w1);
            s += (x0 + y0 + z0 + w0) + (x1 + y1 + z1 + w1);
        }
        for (; i < slice4; i += blockDim.x) {
            float x, y, z, w;
            NC_LD4("ca", base + 4 * i, x, y, z, w);
            s += x + y + z + w;
        }
    }
    if (s == -1.0f) sink[0] = s;
}

extern "C" __global__ void nc_read_shared(int passes, float* sink)
{
    __shared__ float buf[8192];
    for (int i = threadIdx.x; i < 8192; i += blockDim.x) buf[i] = 0.0f;
    __syncthreads();
    volatile float* v = buf;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    const unsigned int t = threadIdx.x;
    for (int p = 0; p < passes; ++p) {
#pragma unroll
        for (int k = 0; k < 32; k += 4) {
            s0 += v[t + 256 * k];
            s1 += v[t + 256 * (k + 1)];
            s2 += v[t + 256 * (k + 2)];
            s3 += v[t + 256 * (k + 3)];
        }
    }
    if (s0 + s1 + s2 + s3 == -1.0f) sink[0] = s0;
}
"""
#: Words of shared memory each thread loads per pass of ``nc_read_shared`` (needs 256 threads per block).
SHARED_LOADS_PER_PASS = 32
#: L1 slice per block (bytes).
L1_SLICE_BYTES = 8 << 10


@dataclass(frozen=True)
class LevelWork:
    """How one per-level kernel is launched and how many bytes one launch loads."""

    level: str
    kernel: str
    grid: int
    buffer_bytes: int
    passes: int
    work_bytes: int


def blocks_to_fill(dev: DeviceProps, per_sm_cap: int | None = None) -> int:
    """Blocks of ``BLOCK`` threads that fill every SM (at least one per SM)."""
    per_sm = max(1, dev.max_threads_per_sm // BLOCK)
    if per_sm_cap is not None:
        per_sm = min(per_sm, per_sm_cap)
    return dev.sms * per_sm


def level_work(level: str, dev: DeviceProps, free_bytes: int) -> LevelWork:
    """Buffer, grid and passes for ``level`` on ``dev`` (sizes from its L2 and free memory)."""
    l2 = max(dev.l2_bytes, 1 << 20)
    if level == "dram":
        size = max(4 * l2, 256 << 20)
        size = min(size, free_bytes // 2)
        size -= size % (16 * BLOCK)
        if size <= 0:
            msg = f"no room for a DRAM buffer ({free_bytes} B free)"
            raise MeasureError(msg, out_of_memory=True)
        return LevelWork(level, "nc_read_dram", blocks_to_fill(dev), size, 1, size)
    if level == "l2":
        size = max(16 * BLOCK, (l2 // 4) - (l2 // 4) % (16 * BLOCK))
        passes = max(1, (4 << 30) // size)
        return LevelWork(level, "nc_read_dram", blocks_to_fill(dev), size, passes, passes * size)
    if level == "l1":
        grid = blocks_to_fill(dev, per_sm_cap=4)
        passes = 4096
        return LevelWork(level, "nc_read_l1", grid, L1_SLICE_BYTES * grid, passes, passes * L1_SLICE_BYTES * grid)
    if level == "shared":
        grid = blocks_to_fill(dev, per_sm_cap=4)
        passes = 4096
        work = 4 * SHARED_LOADS_PER_PASS * passes * BLOCK * grid
        return LevelWork(level, "nc_read_shared", grid, 0, passes, work)
    msg = f"unknown memory level {level!r}"
    raise ValueError(msg)


# -- GPU-touching preparation (not yet run on a GPU) -----------------------------------------


def _events(cuda: Cuda, stack: contextlib.ExitStack) -> tuple[object, object, object]:
    s = cuda.stream()
    stack.callback(cuda.destroy_stream, s)
    e0, e1 = cuda.event(), cuda.event()
    stack.callback(cuda.destroy_event, e0)
    stack.callback(cuda.destroy_event, e1)
    return s, e0, e1


def prepare_peak(cuda: Cuda, case: Case, stack: contextlib.ExitStack) -> Point:
    """A peak-FLOP point: launch ``nc_peak`` over the whole GPU, timed with CUDA events."""
    fam = case.family
    dev = cuda.devices[case.gpu]
    op = fam.op.removeprefix("peak_")
    kernel = peak_kernel(fam.precision, op, cuda.arch(case.gpu))  # type: ignore[arg-type]
    fn = cuda.module(case.gpu, kernel.source).fn("nc_peak")
    cuda.set_device(case.gpu)
    sink = cuda.malloc(8)
    stack.callback(cuda.free, sink)
    s, e0, e1 = _events(cuda, stack)
    grid = blocks_to_fill(dev)
    one, zero = ONE_ZERO[fam.precision]  # type: ignore[index]
    at = ARG_TYPE[fam.precision]  # type: ignore[index]
    args = [("i32", PEAK_ITERS), (at, one), (at, zero), ("ptr", sink)]
    flop = kernel.flop_per_thread_iter * PEAK_ITERS * grid * BLOCK

    def rep() -> float:
        cuda.record(e0, s)
        cuda.launch(fn, grid, BLOCK, args, s)
        cuda.record(e1, s)
        cuda.sync_event(e1)
        return cuda.elapsed_s(e0, e1)

    label = f"{grid} blocks x {BLOCK} threads, {PEAK_CHAINS} chains x {PEAK_UNROLL} x {PEAK_ITERS}"
    if not kernel.native:
        label += "; BF16 ADD/MUL run as FMA (no native bf16 add/mul before sm_90)"
    return Point(rep, float(flop), label=label)


def prepare_level(cuda: Cuda, case: Case, stack: contextlib.ExitStack) -> Point:
    """A per-level bandwidth point: the level's read kernel, timed with CUDA events."""
    dev = cuda.devices[case.gpu]
    free, _ = cuda.mem_info(case.gpu)
    work = level_work(case.family.level, dev, free)  # type: ignore[arg-type]
    fn = cuda.module(case.gpu, LEVEL_SOURCE).fn(work.kernel)
    cuda.set_device(case.gpu)
    sink = cuda.malloc(8)
    stack.callback(cuda.free, sink)
    buf = 0
    if work.buffer_bytes:
        buf = cuda.malloc(work.buffer_bytes)
        stack.callback(cuda.free, buf)
        cuda.memset(buf, 0, work.buffer_bytes)
    s, e0, e1 = _events(cuda, stack)
    if work.kernel == "nc_read_dram":
        args = [("ptr", buf), ("u64", work.buffer_bytes // 16), ("i32", work.passes), ("ptr", sink)]
    elif work.kernel == "nc_read_l1":
        args = [("ptr", buf), ("u32", L1_SLICE_BYTES // 16), ("i32", work.passes), ("ptr", sink)]
    else:
        args = [("i32", work.passes), ("ptr", sink)]

    def rep() -> float:
        cuda.record(e0, s)
        cuda.launch(fn, work.grid, BLOCK, args, s)
        cuda.record(e1, s)
        cuda.sync_event(e1)
        return cuda.elapsed_s(e0, e1)

    label = f"{work.grid} blocks x {BLOCK} threads, buffer {work.buffer_bytes} B, {work.passes} passes"
    return Point(rep, float(work.work_bytes), label=label)
