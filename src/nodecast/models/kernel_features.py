"""What the learned kernel model knows of a kernel and of two GPUs: data-sheet ratios and per-op modifiers.

The learned model (``nodecast.models.kernel_learned``) predicts the log of a
kernel's time ratio between GPU B and GPU A, y = ln(T_B / T_A), as a sum of
data-sheet log-ratios x_j, each with a weight that depends on the kernel::

    y = sum_j x_j * (sum_k z_k * W[family, j, k])                          (1)

Ratios x_j (all ln(A / B), so that a faster B gives a negative y; all 0 when
A and B are the same GPU, which makes (1) give back the measured time):

* ``dram``: DRAM bandwidth, D_A / D_B;
* ``compute``: the peak FLOP/s of the unit the kernel runs on (``peak_key``:
  the FP32 lanes, the BF16 tensor cores...), P_A / P_B;
* ``clock``: boost clock, C_A / C_B (latency-bound kernels: issue and memory
  latency in cycles);
* ``wave``: ln(ceil(U / S_B) / ceil(U / S_A)) + ln(S_B / S_A), with S the
  GPU's SMs x resident blocks per SM and U the kernel's blocks (or GEMM
  tiles): 0 for a kernel of many waves, ln(S_B / S_A) for one that fills
  neither GPU (more SMs do not help it), and the quantization of the last
  wave between (Habitat's wave scaling, ``nodecast.models.kernel_wave``);
* ``l2``: L2 capacity, L2_A / L2_B, for an op whose working set (its minimum
  DRAM bytes, known from an op table's shapes) fits in one GPU's L2 and not in
  the other's; 0 for every other op.

Modifiers z_k (per op, from what was measured on A and what the op is):
``1``; ``size`` = clip(log10(T_A / 10 µs), -1.5, 3) (short kernels are
bound by latency, not by any peak); ``size²``; ``intensity`` =
clip(log10(I / R_A), -2, 2) with I = FLOP / bytes of the op (op tables, the
corpora) and R_A = P_A / D_A the ridge point of A, 0 where unknown;
``unknown`` = 1 where the intensity is unknown; ``tensor`` = 1 for ops on
tensor (matrix) cores. So the memory-versus-compute
weight (Habitat's gamma) is learned per family as a function of size and
intensity, instead of being set by hand.

Everything here is computed per op with numpy over whole arrays; the
prediction never builds the (ops x weights) design matrix (``apply``), the fit
does so in chunks (``nodecast.fit.kernels``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nodecast.models.kernel_family import Family

#: Ratio features x_j, in the order of the weights' second axis.
RATIOS = ("dram", "compute", "clock", "wave", "l2")
#: What the weights act on (``differences``), in the order of the weights' second axis.
DIFFERENCES = ("dram", "clock", "wave", "l2")
#: Modifiers z_k, in the order of the weights' third axis.
MODIFIERS = ("one", "size", "size2", "intensity", "unknown", "tensor")
#: Reference kernel time of the ``size`` modifier, seconds.
SIZE_REF_S = 1e-5

#: Peak keys in the order of the integer codes ``peak_code`` uses (-1: none known).
PEAK_KEYS = ("fp64", "fp32", "fp16", "bf16", "fp64_tensor", "tf32_tensor", "fp16_tensor", "bf16_tensor",
             "fp8_tensor", "fp4_tensor", "int8_tensor")
#: Per ``PEAK_KEYS`` code: whether the unit is a tensor (matrix) core.
_TENSOR = np.array([k.endswith("_tensor") for k in PEAK_KEYS], dtype=np.float64)
#: Where a GPU lacks a peak, the next one tried (the unit the op would fall back to, or its nearest kin).
PEAK_FALLBACK = {"bf16_tensor": "fp16_tensor", "fp16_tensor": "fp16", "fp16": "fp32", "bf16": "fp16",
                 "tf32_tensor": "fp32", "fp8_tensor": "fp16_tensor", "fp4_tensor": "fp8_tensor",
                 "int8_tensor": "fp16_tensor", "fp64_tensor": "fp64", "fp64": "fp32"}


@dataclass(frozen=True)
class GpuFigures:
    """The data-sheet figures of one GPU the features use (SI units: bytes/s, Hz, FLOP/s, bytes)."""

    name: str
    vendor: str
    architecture: str
    dram_bps: float
    clock_hz: float
    sms: int
    l2_bytes: float
    peaks: dict[str, float]
    max_blocks_per_sm: int
    max_threads_per_sm: int

    def peak(self, key: str) -> tuple[float, bool]:
        """Peak FLOP/s of ``key`` and whether it is the GPU's own (False: a fallback of ``PEAK_FALLBACK``)."""
        k: str | None = key
        own = True
        while k is not None:
            if self.peaks.get(k):
                return self.peaks[k], own
            k = PEAK_FALLBACK.get(k)
            own = False
        return self.peaks.get("fp32", float("nan")), False


def figures_of(machine: object) -> GpuFigures:
    """``GpuFigures`` of a Machine's GPU (``nodecast.machines.schema.Machine``); figures it lacks are NaN."""
    gpu = machine.gpu  # type: ignore[attr-defined]
    sheet = gpu.sheet
    peaks = {k: v for k in PEAK_KEYS if (v := gpu.peak_flops_per_s(k))}
    l2 = gpu.levels.get("l2")
    l2_bytes = (l2.size_bytes if l2 is not None and l2.size_bytes else
                (sheet.l2_bytes if sheet is not None and getattr(sheet, "l2_bytes", None) else float("nan")))
    limits = gpu.limits
    try:
        dram = float(gpu.dram_bandwidth_bps)
    except (KeyError, TypeError):
        dram = float("nan")
    return GpuFigures(
        name=machine.name,  # type: ignore[attr-defined]
        vendor=(sheet.vendor if sheet is not None else ("amd" if (limits and limits.vendor == "amd") else "nvidia")),
        architecture=(sheet.architecture if sheet is not None else ""),
        dram_bps=dram, clock_hz=float(gpu.clock_hz), sms=int(gpu.sms), l2_bytes=float(l2_bytes), peaks=peaks,
        max_blocks_per_sm=int(limits.max_blocks_per_sm) if limits is not None else 16,
        max_threads_per_sm=int(limits.max_threads_per_sm) if limits is not None else 2048)


def figures_of_sheet(sheet: object) -> GpuFigures:
    """``GpuFigures`` of a GPU data sheet (``nodecast.machines.parts.GpuSheet``)."""
    limits = sheet.limits  # type: ignore[attr-defined]
    peaks = {k: v for k in PEAK_KEYS if (v := sheet.peak(k))}  # type: ignore[attr-defined]
    l2 = getattr(sheet, "l2_bytes", None)
    return GpuFigures(name=sheet.key, vendor=sheet.vendor, architecture=sheet.architecture,  # type: ignore[attr-defined]
                      dram_bps=float(sheet.dram_bandwidth_bps), clock_hz=float(sheet.boost_clock_hz),  # type: ignore[attr-defined]
                      sms=int(sheet.sms), l2_bytes=float(l2) if l2 else float("nan"), peaks=peaks,  # type: ignore[attr-defined]
                      max_blocks_per_sm=int(limits.max_blocks_per_sm), max_threads_per_sm=int(limits.max_threads_per_sm))


def _log_ratio(a: float, b: float) -> float:
    """ln(a / b), 0 where either is unknown (no evidence of a change)."""
    return float(np.log(a / b)) if np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0 else 0.0


@dataclass
class OpFeatures:
    """Per-op inputs of the features: what was measured on A and what the op is (arrays of one length).

    ``family``: ``Family`` codes; ``peak_key``: index into ``PEAK_KEYS`` of the unit the op runs on;
    ``t_a_s``: time on A, s; ``flops``, ``work_bytes``: the op's FLOP and minimum DRAM bytes (NaN: unknown);
    ``blocks``: thread blocks (0: unknown); ``threads``: threads per block (0: unknown); ``tiles``: output
    tiles of a GEMM from its shape (0: unknown; used where ``blocks`` is).
    """

    family: np.ndarray
    peak_key: np.ndarray
    t_a_s: np.ndarray
    flops: np.ndarray
    work_bytes: np.ndarray
    blocks: np.ndarray
    threads: np.ndarray
    tiles: np.ndarray

    def __len__(self) -> int:
        return len(self.t_a_s)


def _resident(threads: np.ndarray, family: np.ndarray, fig: GpuFigures) -> np.ndarray:
    """Blocks one SM holds at once, from its block and thread limits alone (registers and shared memory are not
    recorded everywhere). GEMM-like kernels (GEMM, convolution, attention) and GEMM tiles (``threads`` 0) count
    one block per SM: their tiles fill the registers and shared memory, not the thread slots."""
    by_threads = np.where(threads > 0, fig.max_threads_per_sm // np.maximum(threads, 1), 1)
    out = np.clip(by_threads, 1, fig.max_blocks_per_sm)
    return np.where(np.isin(family, _MATRIX), 1, out)


#: Families whose blocks are tiles that fill an SM's registers and shared memory.
_MATRIX = (Family.GEMM, Family.CONV, Family.ATTENTION)


def ratios(ops: OpFeatures, a: GpuFigures, b: GpuFigures) -> tuple[np.ndarray, np.ndarray]:
    """The ratio features x (ops x ``RATIOS``) of moving ``ops`` from GPU ``a`` to GPU ``b``, and per op whether
    both GPUs have the peak of the op's unit themselves (False: a fallback peak, ``GpuFigures.peak``)."""
    n = len(ops)
    x = np.zeros((n, len(RATIOS)), order="F")
    x[:, 0] = _log_ratio(a.dram_bps, b.dram_bps)
    own = np.ones(n, dtype=bool)
    for code in np.unique(ops.peak_key):
        key = PEAK_KEYS[code] if code >= 0 else "fp32"
        pa, own_a = a.peak(key)
        pb, own_b = b.peak(key)
        sel = ops.peak_key == code
        x[sel, 1] = _log_ratio(pa, pb)
        own[sel] = own_a and own_b
    x[:, 2] = _log_ratio(a.clock_hz, b.clock_hz)
    units = np.where(ops.blocks > 0, ops.blocks, ops.tiles).astype(np.float64)
    known = units > 0
    if known.any():
        u = units[known]
        s_a = a.sms * _resident(ops.threads[known], ops.family[known], a)
        s_b = b.sms * _resident(ops.threads[known], ops.family[known], b)
        x[known, 3] = np.log(np.ceil(u / s_b) / np.ceil(u / s_a)) + np.log(s_b / s_a)
    # The L2 term counts only for an op whose working set (its minimum DRAM bytes) fits in one GPU's L2 and not
    # in the other's: a kernel streaming far more than either L2 (or fitting in both) sees no difference there.
    small, large = sorted((a.l2_bytes, b.l2_bytes))
    between = np.isfinite(ops.work_bytes) & (ops.work_bytes > small) & (ops.work_bytes <= large)
    x[:, 4] = np.where(between, _log_ratio(a.l2_bytes, b.l2_bytes), 0.0)
    return x, own


def modifiers(ops: OpFeatures, a: GpuFigures) -> np.ndarray:
    """The modifiers z (ops x ``MODIFIERS``) of the ops measured on GPU ``a`` (module docstring)."""
    n = len(ops)
    z = np.empty((n, len(MODIFIERS)), order="F")  # column-major: ``apply`` reads it column by column
    z[:, 0] = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.clip(np.log10(np.maximum(ops.t_a_s, 1e-9) / SIZE_REF_S), -1.5, 3.0)
        z[:, 1] = size
        z[:, 2] = size * size
        peak_a = np.array([a.peak(PEAK_KEYS[c] if c >= 0 else "fp32")[0] for c in range(-1, len(PEAK_KEYS))])
        ridge = peak_a[ops.peak_key + 1] / a.dram_bps
        intensity = np.log10(ops.flops / ops.work_bytes / ridge)
    known = np.isfinite(intensity)
    z[:, 3] = np.where(known, np.clip(np.where(known, intensity, 0.0), -2.0, 2.0), 0.0)
    z[:, 4] = (~known).astype(np.float64)
    z[:, 5] = _TENSOR[ops.peak_key]
    return z


def offset(x: np.ndarray) -> np.ndarray:
    """The part of y with a fixed weight of 1: the compute ratio (a GPU whose every rate is k times faster runs
    every kernel k times faster, so the weights of the other ratios act on their differences from it)."""
    return x[:, 1]


def differences(x: np.ndarray) -> np.ndarray:
    """The ratio features the weights act on (ops x (``RATIOS`` - 1)): DRAM and clock minus the compute ratio,
    then the wave and L2 terms as they are (they are not rates)."""
    d = np.empty((len(x), 4), order="F")  # column-major: ``apply`` reads it column by column
    np.subtract(x[:, 0], x[:, 1], out=d[:, 0])
    np.subtract(x[:, 2], x[:, 1], out=d[:, 1])
    d[:, 2] = x[:, 3]
    d[:, 3] = x[:, 4]
    return d


#: The differences whose per-op coefficients are shares of the kernel's time, held to [0, 1] (``apply``): a
#: share cannot be negative (more DRAM bandwidth never slows a kernel down) nor above the whole.
SHARES = ("dram", "clock")


def apply(weights: np.ndarray, family: np.ndarray, d: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The fitted part of y in equation (1) per op: sum_j d_j c_j, c_j = sum_k z_k W[set, j, k].

    ``weights`` is (weight sets x (``RATIOS`` - 1) x ``MODIFIERS``), the global part included; ``family`` the
    weight set of each op (``kernel_learned.weight_index``); ``d`` the ratio differences (``differences``),
    ``z`` the modifiers. The DRAM and clock coefficients are shares of the kernel's time and are held to
    [0, 1] (``SHARES``): without this, a fit on few GPUs can give a share below 0 for some sizes, and a GPU
    with more bandwidth would come out slower (an H200 slower than an H100). Column by column: each weight is gathered per op through the set code and the sums are
    1-D multiply-adds, with no per-set mask or copy.
    """
    fam = np.clip(family, 0, len(weights) - 1).astype(np.intp)
    y = np.zeros(len(fam))
    for j in range(weights.shape[1]):
        c = weights[:, j, 0][fam]
        for k in range(1, weights.shape[2]):
            c += weights[:, j, k][fam] * z[:, k]
        if DIFFERENCES[j] in SHARES:
            np.clip(c, 0.0, 1.0, out=c)
        y += d[:, j] * c
    return y
