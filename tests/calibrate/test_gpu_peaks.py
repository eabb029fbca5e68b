"""The roofline kernels' sources and work counts (the launches themselves need a GPU)."""

from __future__ import annotations

import pytest

from nodecast.calibrate import MeasureError
from nodecast.calibrate import gpu_peaks as G
from nodecast.calibrate.cuda import DeviceProps


def device(**kw: object) -> DeviceProps:
    """A fake H100 (132 SMs, 2048 threads per SM, 50 MiB L2)."""
    base = {"index": 0, "name": "H100", "cc": (9, 0), "total_bytes": 80 << 30, "sms": 132, "l2_bytes": 50 << 20,
            "bus_id": "0000:10:00.0", "can_map_host": True, "managed": True, "concurrent_managed": True,
            "max_threads_per_sm": 2048, "clock_khz": 1_755_000}
    base.update(kw)
    return DeviceProps(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("precision", "op", "flop"), [
    ("fp64", "fma", 16 * 8 * 2), ("fp32", "addmul", 16 * 8), ("fp16", "fma", 16 * 8 * 2 * 2), ("bf16", "addmul", 16 * 8 * 2),
])
def test_flop_per_thread_iteration(precision, op, flop):
    """An FMA counts 2 FLOP, an ADD or MUL 1, per lane; packed halves have 2 lanes."""
    assert G.peak_kernel(precision, op, 90).flop_per_thread_iter == flop


def test_fma_kernel_uses_rounded_fma():
    """The FMA kernel runs PEAK_CHAINS explicit fma.rn instructions per unrolled step."""
    src = G.peak_kernel("fp32", "fma", 80).source
    assert src.count('asm("fma.rn.f32') == G.PEAK_CHAINS
    assert 'extern "C" __global__ void nc_peak(int iters, float b, float c, float* sink)' in src


def test_addmul_kernel_cannot_be_contracted():
    """The ADD/MUL kernel alternates mul.rn and add.rn (PTX never fuses instructions with a rounding modifier)."""
    src = G.peak_kernel("fp64", "addmul", 80).source
    assert src.count("mul.rn.f64") == src.count("add.rn.f64") == G.PEAK_CHAINS // 2
    assert "fma" not in src


def test_packed_half_kernels():
    """FP16 uses f16x2 in 32-bit registers; BF16 add/mul before sm_90 run as FMA and say so."""
    fp16 = G.peak_kernel("fp16", "addmul", 70)
    assert "add.rn.f16x2" in fp16.source and '"+r"(a0)' in fp16.source and fp16.native
    old = G.peak_kernel("bf16", "addmul", 80)
    assert "add.rn.bf16x2" not in old.source and "fma.rn.bf16x2" in old.source and not old.native
    new = G.peak_kernel("bf16", "addmul", 90)
    assert "add.rn.bf16x2" in new.source and new.native


def test_operands_are_one_and_zero():
    """b = 1 and c = 0 as each precision's bit pattern, so values stay put."""
    assert G.ONE_ZERO["fp16"] == (0x3C003C00, 0) and G.ONE_ZERO["bf16"] == (0x3F803F80, 0)


def test_unknown_peak_kernel():
    """Only the four precisions and two ops exist."""
    with pytest.raises(ValueError, match="no peak kernel"):
        G.peak_kernel("fp8", "fma", 90)


def test_level_work_sizes_follow_the_gpu():
    """DRAM reads 4x the L2 once; L2 repeats a quarter of the L2; L1 and shared count bytes loaded per pass."""
    dev = device()
    dram = G.level_work("dram", dev, free_bytes=70 << 30)
    assert dram.buffer_bytes == 256 << 20 and dram.passes == 1 and dram.work_bytes == dram.buffer_bytes
    l2 = G.level_work("l2", dev, free_bytes=70 << 30)
    assert l2.buffer_bytes <= (50 << 20) // 4 and l2.work_bytes == l2.passes * l2.buffer_bytes
    l1 = G.level_work("l1", dev, free_bytes=70 << 30)
    assert l1.grid == 132 * 4 and l1.work_bytes == 4096 * G.L1_SLICE_BYTES * l1.grid
    sh = G.level_work("shared", dev, free_bytes=70 << 30)
    assert sh.work_bytes == 4 * 32 * 4096 * G.BLOCK * sh.grid and sh.buffer_bytes == 0


def test_dram_buffer_respects_free_memory():
    """The DRAM buffer never takes more than half the free memory; none free is an out-of-memory failure."""
    assert G.level_work("dram", device(), free_bytes=100 << 20).buffer_bytes <= 50 << 20
    with pytest.raises(MeasureError) as info:
        G.level_work("dram", device(), free_bytes=1000)
    assert info.value.out_of_memory


def test_blocks_fill_every_sm():
    """Enough 256-thread blocks for every SM's thread slots (at least one per SM)."""
    assert G.blocks_to_fill(device()) == 132 * 8
    assert G.blocks_to_fill(device(max_threads_per_sm=128)) == 132


def test_level_kernels_in_source():
    """The per-level kernels exist with explicit cache operators."""
    for name in ("nc_read_dram", "nc_read_l1", "nc_read_shared"):
        assert f'extern "C" __global__ void {name}(' in G.LEVEL_SOURCE
    assert 'NC_LD4("cg"' in G.LEVEL_SOURCE and 'NC_LD4("ca"' in G.LEVEL_SOURCE


def _nvrtc_session():
    """A Cuda object for NVRTC only (no device needed), or a skip when cuda-python or libnvrtc is missing."""
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed here")
    from nodecast.calibrate.cuda import Cuda, load_bindings

    c = Cuda(load_bindings())
    try:
        c.nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - libnvrtc not found
        pytest.skip(f"NVRTC is not available here ({type(exc).__name__})")
    return c


@pytest.mark.parametrize("arch", [75, 80, 90])
def test_kernels_compile_and_assemble_with_nvrtc(arch):
    """Every kernel compiles to a CUBIN (NVRTC + ptxas: the inline PTX is valid) where NVRTC is installed; no GPU needed."""
    from nodecast.calibrate.transfers import TRANSFER_SOURCE

    c = _nvrtc_session()
    sources = [TRANSFER_SOURCE, G.LEVEL_SOURCE]
    for p in ("fp64", "fp32", "fp16", "bf16"):
        if p == "bf16" and arch < 80:
            continue
        sources += [G.peak_kernel(p, op, arch).source for op in ("fma", "addmul")]
    for src in sources:
        assert len(c.compile(src, ("sm", arch))) > 0


def test_addmul_ptx_has_no_fma():
    """Compiled to PTX, the ADD/MUL kernel keeps 64 mul.rn and 64 add.rn per unrolled step and no fma."""
    import re

    c = _nvrtc_session()
    ptx = c.compile(G.peak_kernel("fp32", "addmul", 90).source, ("compute", 90)).decode()
    assert len(re.findall(r"mul\.rn\.f32", ptx)) == len(re.findall(r"add\.rn\.f32", ptx)) == 64
    assert "fma" not in ptx
