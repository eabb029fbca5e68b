"""Hierarchical roofline projection of GPU kernels with kernel-specific ceilings.

Van Lanker, Taboada, Brunet, Trahay, "Predicting GPU kernel's performance on
upcoming architectures", Euro-Par 2024 (../shared/reference/papers/
roofline-kernel-projection.txt; METHODS.md section 3). A kernel profiled once
with Nsight Compute on a source GPU is projected onto a target GPU known by
its figures. Every step is vectorized over all launches.

For each launch k and GPU g:

* compute ceiling from the op mix (eq. 2) and the warp usage (eq. 3)::

      Perf_mix = P_FMA * N_FMA / N + P_ADDMUL * (N_ADD + N_MUL) / N,  N = N_FMA + N_ADD + N_MUL
      Perf_ceil = (active threads per warp instruction / 32) * Perf_mix

  per precision; a kernel mixing precisions gets the FLOP-weighted harmonic
  mean of its per-precision ceilings (its compute time is the sum of the
  per-precision times), which is eq. 3 itself for a one-precision kernel;
* per-level times (eq. 4) ``t_m = N_m / BW_m`` for L1, L2 and DRAM, where
  ``N_m`` are the bytes that *hit* level m; and shared memory (eq. 5)
  ``t_shm = N_shm / N_shm_pc * 128 / BW_shm`` with ``N_shm_pc`` the bytes per
  shared-memory wavefront (cycle), 128 B when conflict-free;
* bandwidth ceilings, weighted harmonic means of the levels a byte traverses
  (eqs. 6-8)::

      BWceil_L1 = (N_L1 + N_shm + N_L2 + N_DRAM) / (t_L1 + t_shm + t_L2 + t_DRAM)
      BWceil_L2 = (N_L2 + N_DRAM) / (t_L2 + t_DRAM),    BWceil_DRAM = N_DRAM / t_DRAM

* operational intensities ``OI_m = FLOP / N+_m`` (eq. 10) with ``N+_m`` the
  numerator of the level's ceiling (the bytes traversing m);
* the projection (eq. 9), for m in L1, L2, DRAM::

      Perf_t(m) = Perf_s / roofline_s,m(OI_s,m) * roofline_t,m(OI_t,m)
      roofline_g,m(OI) = min(BWceil_g,m * OI, Perf_ceil_g)          (eq. 1 with ceilings)

  The three values give the performance interval; kernel time = FLOP / Perf.

Hit bytes from ncu's counters (which count bytes *traversing* each level):
``N_DRAM = dram__bytes``, ``N_L2 = max(lts__t_bytes - dram__bytes, 0)``,
``N_L1 = max(l1tex__t_bytes - lts__t_bytes, 0)``, ``N_shm`` = shared bytes.
The clip at 0 matters for streaming kernels where DRAM counts more bytes than
L2 (write-allocate, ECC): then nothing hits L1/L2 and all three projections
are DRAM's.

Computation in the time domain. ``FLOP / roofline_m(FLOP / N+_m)`` equals
``R_m = max(tau_m, t_c)`` with ``tau_m = N+_m / BWceil_m`` (the sum of the
times of the levels at and below m) and ``t_c = FLOP / Perf_ceil``, so eq. 9
becomes ``time_t(m) = R_t,m / e_m`` with the source efficiency
``e_m = R_s,m / T_s``. This form needs no division by FLOP, so kernels without
floating-point work (fills, copies) project as memory-bound kernels (the
limit of eq. 9 as FLOP -> 0) instead of 0/0.

Tensor cores (the paper's kernels have none). A launch that ran tensor-pipe
instructions (``sm__inst_executed_pipe_tensor.sum`` > 0) adds
``FLOP_tensor = n_tensor x F_inst`` to its compute time at the tensor peak of
its precision (``GpuFigures.tensor``: the sheet's ``*_tensor`` peaks; the
precision from the kernel's name, else FP16, ``kernel_precision.tensor_precision``)::

    t_c = FLOP / Perf_ceil + FLOP_tensor / P_tensor

``F_inst``, the FLOP of one warp-level tensor instruction, depends on the
source architecture (``TENSOR_FLOP_PER_INST``: 512 for Volta's HMMA.884, the
factor NERSC's V100 roofline uses, FORMATS.md C.1). On a source architecture
without a known factor the tensor launches are projected compute-bound at the
tensor peak ratio, ``T_t = T_s x P_tensor,s / P_tensor,t``, and said so.

Decisions the paper leaves open (each is said in the result's notes):

* a source kernel faster than its own ceiling at a level (``e_m > 1``: the
  measured maxima are below what the kernel achieved) would project above the
  target's ceiling; the efficiency is capped at 1, so a projection never
  exceeds the target's roofline;
* the projected time ("mean point of the interval") is FLOP divided by the
  midpoint of the performance interval, i.e. the harmonic mean of the two
  time bounds;
* the "bound" of a launch is its largest term on the target among the compute
  time and the per-level times of eqs. 4-5;
* a cache level a launch uses whose bandwidth a GPU lacks is bounded by its
  neighbours (no slower than the known level outside it, no faster than the
  known level inside it) and the interval widened to hold both ends
  (``project_kernels``), rather than refusing the projection.

GPU figures (``gpu_figures``): a Machine's ``[measured.gpu]`` maxima when it
has them, else its data sheet's published maxima (``[measured]``: the
paper's public benchmarks), else its data-sheet peak scaled by the *source*
GPU's measured/peak ratio for the same quantity (the paper's rule when no
public benchmark exists), else the data-sheet peak as is. The sheets give
L2/L1 peaks derived from documented widths (docs/kernels.md). Shared-memory
bandwidth defaults to the L1 figure (shared memory is carved out of L1 on
V100..H100).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.models.base import ModelResult, register
from nodecast.notes import LEVELS_UNKNOWN, Note
from nodecast.words import plural
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics, join_trace

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.models.sass import SassComparison
    from nodecast.traces.trace import Trace

#: Bytes per cycle of conflict-free shared memory: 32 banks x 4 B (eq. 5's N_shm_pc^max).
SHARED_BYTES_PER_CYCLE_MAX = 128.0
#: Threads per warp (eq. 3).
WARP_SIZE = 32.0
#: Levels of the projection interval, outermost first.
PROJECTION_LEVELS = ("dram", "l2", "l1")
#: Precisions the model knows, as in ``nodecast.machines.schema.PRECISIONS`` minus bf16 (no ncu counters).
MODEL_PRECISIONS = tuple(PRECISION_LETTER)

#: FLOP per warp-level tensor-pipe instruction (``sm__inst_executed_pipe_tensor``) by source target. Volta:
#: one HMMA.884 is an 8x8x4 step of a warp quad-pair, 16 of them make an m16n16k16 mma (16x16x16x2 = 8192 FLOP),
#: so 512 FLOP each -- NERSC's V100 hierarchical roofline counts ``512 x sm__inst_executed_pipe_tensor.sum``
#: (../shared/reference/FORMATS.md C.1). Other architectures issue other shapes and are left out rather than guessed.
TENSOR_FLOP_PER_INST: dict[str, float] = {"sm_70": 512.0, "sm_72": 512.0}

#: Table 1 of the paper: measured maxima (HPL-like FP64 and STREAM-like per level).
TABLE1_ORIGIN = "Van Lanker et al., Euro-Par 2024, Table 1"
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "V100": {"perf_max_flops": 6890e9, "dram_bps": 846e9, "l2_bps": 2460e9, "l1_bps": 13963e9},
    "A100-40": {"perf_max_flops": 9476e9, "dram_bps": 1375e9, "l2_bps": 4710e9, "l1_bps": 19492e9},
    "A100-80": {"perf_max_flops": 9476e9, "dram_bps": 1678e9, "l2_bps": 4710e9, "l1_bps": 19492e9},
    "H100": {"perf_max_flops": 24979e9, "dram_bps": 1907e9, "l2_bps": 7758e9, "l1_bps": 25330e9},
}


def measured_gpu_toml(gpu: str, *, with_measured_table: bool = True) -> str:
    """The ``[measured.gpu]`` block of a machine file with Table 1's values for ``gpu`` (a PAPER_TABLE1 key).

    Table 1 gives one compute maximum (HPL: FP64, FMA-dominated); the ADD/MUL
    maximum is written as half of it, the FMA : ADD/MUL ratio of the data
    sheets. ``with_measured_table`` adds the ``[measured]`` table with its
    required ``origin`` (leave it out for a file that already has one).
    """
    row = PAPER_TABLE1[gpu]

    def g(v: float) -> str:
        return f"{v / 1e9:g}e9"

    lines = []
    if with_measured_table:
        lines += ["[measured]", f'origin = "{TABLE1_ORIGIN}"', ""]
    lines += [
        "[measured.gpu]",
        f'origin = "{TABLE1_ORIGIN}"',
        "[measured.gpu.peak_flops.fp64]",
        f"fma = {g(row['perf_max_flops'])}".ljust(24) + f"# Table 1 Perf^Max: {row['perf_max_flops'] / 1e9:g} GFLOP/s (HPL)",
        f"addmul = {g(row['perf_max_flops'] / 2)}".ljust(24) + "# half of fma (ADD/MUL: 1 FLOP per instruction); not in Table 1",
        "[measured.gpu.level_bandwidth_bps]",
        f"dram = {g(row['dram_bps'])}".ljust(24) + f"# Table 1 BW_DRAM^Max: {row['dram_bps'] / 1e9:g} GB/s (STREAM-like)",
        f"l2 = {g(row['l2_bps'])}".ljust(24) + f"# Table 1 BW_L2^Max: {row['l2_bps'] / 1e9:g} GB/s",
        f"l1 = {g(row['l1_bps'])}".ljust(24) + f"# Table 1 BW_L1^Max: {row['l1_bps'] / 1e9:g} GB/s",
    ]
    return "\n".join(lines)


# -- GPU figures -------------------------------------------------------------------
@dataclass(frozen=True)
class GpuFigures:
    """The maxima of one GPU the model uses, in FLOP/s and bytes/s, and where each came from.

    ``fma[p]``/``addmul[p]`` are eq. 2's P_FMA and P_ADDMUL for precision p;
    ``bandwidth[level]`` is BW^max of eq. 4-5; ``tensor[key]`` the tensor
    peaks (``fp16_tensor``...) of the machine or its data sheet. A quantity the
    machine file cannot give is absent. ``origin[key]`` says how a value was
    obtained (keys ``fma.fp32``, ``bw.l2``...). ``target`` is the GPU's
    instruction-set target (``sm_70``) when its data sheet is known.
    """

    machine: str
    model: str
    path: str | None
    fma: dict[str, float]
    addmul: dict[str, float]
    bandwidth: dict[str, float]
    origin: dict[str, str]
    tensor: dict[str, float] = field(default_factory=dict)
    target: str | None = None

    def peak(self, precision: str, op: str, needed_by: str) -> float:
        """P_FMA (op "fma") or P_ADDMUL (op "addmul") of a precision; InputError when absent."""
        table = self.fma if op == "fma" else self.addmul
        if precision not in table:
            raise InputError(
                f"no {precision.upper()} compute peak for {self.model} ({needed_by})",
                path=self.path, key=f"gpu.peak_flops.{precision}.{op}",
                hint=_own_file_hint(f"[gpu.peak_flops.{precision}] (data-sheet peak) or "
                                    f"[measured.gpu.peak_flops.{precision}]"))
        return table[precision]

    def bw(self, level: str, needed_by: str) -> float:
        """BW^max of a memory level; InputError when the machine gives none (the projection itself bounds an
        unknown cache level by its neighbours instead: ``bracketed``)."""
        if level not in self.bandwidth:
            raise InputError(
                f"no {level.upper()} bandwidth for {self.model} ({needed_by})",
                path=self.path, key=f"gpu.levels.{level}.bandwidth_bps",
                hint=_own_file_hint(f"gpu.levels.{level}.bandwidth_bps (data-sheet peak) or "
                                    f"measured.gpu.level_bandwidth_bps.{level}"))
        return self.bandwidth[level]

    def unknown_levels(self, hits: Mapping[str, np.ndarray]) -> dict[str, int]:
        """Cache levels (L2, L1, shared) without a bandwidth that some launch has bytes at: level -> launches."""
        return {lv: int((hits[lv] > 0).sum()) for lv in UNKNOWN_ORDER
                if lv not in self.bandwidth and bool((hits[lv] > 0).any())}

    def bracketed(self, levels: Sequence[str]) -> tuple[GpuFigures, GpuFigures]:
        """The figures with each of ``levels`` (unknown) at its slowest and at its fastest plausible bandwidth.

        A cache level is no slower than the nearest known level outside it (DRAM for L2; L2, else DRAM, for
        L1 and shared memory) and no faster than the nearest known level inside it (L1 for L2), unbounded
        (``inf``: no time spent there) when none is. The roofline times fall as a target's bandwidths rise, so
        the two figures bound every projection the true value gives.
        """
        slow, fast = dict(self.bandwidth), dict(self.bandwidth)
        for lv in levels:
            slow[lv] = next(self.bandwidth[o] for o in _OUTSIDE[lv] if o in self.bandwidth)
            fast[lv] = next((self.bandwidth[i] for i in _INSIDE[lv] if i in self.bandwidth), math.inf)
        return replace(self, bandwidth=slow), replace(self, bandwidth=fast)

    def describe(self) -> str:
        """One line: the figures and their origins, for notes."""
        parts = []
        for p in MODEL_PRECISIONS:
            if p in self.fma:
                parts.append(f"{p.upper()} FMA {self.fma[p] / 1e12:.4g} TFLOP/s ({self.origin[f'fma.{p}']})")
        for lv in ("dram", "l2", "l1", "shared"):
            if lv in self.bandwidth:
                parts.append(f"{lv.upper()} {self.bandwidth[lv] / 1e9:,.0f} GB/s ({self.origin[f'bw.{lv}']})")
        return f"{self.machine} ({self.model}): " + "; ".join(parts)


def _own_file_hint(what: str) -> str:
    """What to do about a figure a machine lacks: give it in a machine file of one's own, never edit a shipped one."""
    return (f"Give {what} in a machine file of your own (nodecast machines template --gpu KEY -o node.toml "
            "writes one from a data sheet; docs/machines.md) and pass its path")


#: Unknown cache levels, in the order their bounds are taken (L2 first: L1's slow bound may be L2's).
UNKNOWN_ORDER = ("l2", "l1", "shared")
#: The known levels that bound an unknown one, nearest first: outside it (slower) and inside it (faster).
_OUTSIDE = {"l2": ("dram",), "l1": ("l2", "dram"), "shared": ("l2", "dram")}
_INSIDE: dict[str, tuple[str, ...]] = {"l2": ("l1",), "l1": (), "shared": ()}
_LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "shared": "shared-memory"}


def _datasheet(machine: Machine) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    g = machine.gpu
    fma = {p: v.fma for p, v in g.peak_flops.items()}
    addmul = {p: v.addmul for p, v in g.peak_flops.items()}
    bw = {lv: m.bandwidth_bps for lv, m in g.levels.items() if m.bandwidth_bps}
    return fma, addmul, bw


def _sheet_measured(machine: Machine) -> dict[str, float]:
    """The data sheet's published level maxima (``[measured]``), for the levels the machine takes from that sheet.

    Only while the machine runs the sheet's product as published (its SMs and boost clock): a machine file
    that changes them, or gives a level's bandwidth itself, describes another GPU than the one measured.
    """
    from nodecast.machines.compose import MACHINE_FILE

    sheet = machine.gpu.sheet
    if sheet is None or (machine.gpu.sms, machine.gpu.clock_hz) != (sheet.sms, sheet.boost_clock_hz):
        return {}
    return {lv: v for lv, v in sheet.measured_level_bandwidth_bps.items()
            if not machine.provenance.get(f"gpu.levels.{lv}.bandwidth_bps", "").startswith(MACHINE_FILE)}


def _measured(machine: Machine) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, str]]:
    """Measured FMA and ADD/MUL peaks and level bandwidths, and the origin of each (``fma.fp64``, ``bw.l2``...).

    The machine's ``[measured.gpu]`` wins over its data sheet's published maxima.
    """
    sheet_bw = _sheet_measured(machine)
    origin = {f"bw.{lv}": f"published measurement, data sheet {machine.gpu.sheet.key}"  # type: ignore[union-attr]
              for lv in sheet_bw}
    m = machine.measured
    if m is None:
        return {}, {}, sheet_bw, origin
    where = m.gpu_origin or m.origin
    fma = {p: v.fma for p, v in m.gpu_peak_flops.items()}
    addmul = {p: v.addmul for p, v in m.gpu_peak_flops.items()}
    bw = {**sheet_bw, **m.gpu_level_bandwidth_bps}
    origin.update({f"{kind}.{p}": f"measured, {where}" for p in m.gpu_peak_flops for kind in ("fma", "addmul")})
    origin.update({f"bw.{lv}": f"measured, {where}" for lv in m.gpu_level_bandwidth_bps})
    return fma, addmul, bw, origin


def gpu_figures(machine: Machine, reference: Machine | None = None) -> GpuFigures:
    """The GPU maxima of ``machine``: measured, else data sheet x ``reference``'s measured/peak ratio, else data sheet.

    Measured: the machine's ``[measured.gpu]``, else its data sheet's
    published maxima (``[measured]`` in the sheet; the paper's "publicly
    available benchmarks"). ``reference`` is the source GPU when ``machine``
    is the target (the paper's Peak/Max ratio rule, section 4.1); None for
    the source itself. Shared-memory bandwidth falls back to the L1 value.
    A level no source gives is absent (``project_kernels`` bounds it).
    """
    ds = _datasheet(machine)
    ms_fma, ms_addmul, ms_bw, ms_origin = _measured(machine)
    ref_ds = _datasheet(reference) if reference is not None else ({}, {}, {})
    ref_ms = _measured(reference) if reference is not None else ({}, {}, {}, {})
    out: list[dict[str, float]] = [{}, {}, {}]
    origin: dict[str, str] = {}
    for i, (kind, keys) in enumerate((("fma", MODEL_PRECISIONS), ("addmul", MODEL_PRECISIONS),
                                      ("bw", ("dram", "l2", "l1", "shared")))):
        measured = (ms_fma, ms_addmul, ms_bw)[i]
        sheet = ds[i]
        for key in keys:
            label = f"{kind}.{key}"
            if key in measured:
                out[i][key] = measured[key]
                origin[label] = ms_origin[label]
            elif key in sheet:
                r_meas, r_sheet = ref_ms[i].get(key), ref_ds[i].get(key)
                if reference is not None and r_meas and r_sheet:
                    ratio = r_meas / r_sheet
                    out[i][key] = sheet[key] * ratio
                    origin[label] = f"data sheet x {reference.name} measured/peak {ratio:.3f}"
                else:
                    out[i][key] = sheet[key]
                    origin[label] = "data sheet"
    fma, addmul, bw = out
    if "shared" not in bw and "l1" in bw:
        bw["shared"] = bw["l1"]
        origin["bw.shared"] = "= L1 figure (shared memory lives in L1)"
    from nodecast.machines.parts import TENSOR_PEAKS

    tensor = {k: v for k in TENSOR_PEAKS if (v := machine.gpu.peak_flops_per_s(k))}
    for k in tensor:
        origin[f"tensor.{k}"] = "data sheet"
    target = machine.gpu.sheet.target if machine.gpu.sheet is not None else None
    return GpuFigures(machine.name, machine.gpu.model, str(machine.path) if machine.path else None,
                      fma, addmul, bw, origin, tensor, target)


# -- kernel inputs -------------------------------------------------------------------
@dataclass
class KernelInputs:
    """Per-launch inputs of the model, SI units, one array element per launch.

    ``inst[(precision, op)]`` are thread-instruction counts (op in fma, add,
    mul); bytes are ncu's traversing counts; ``shared_wavefronts`` NaN means
    conflict-free; ``threads_per_inst`` NaN means 32. ``tensor_inst`` are
    warp-level tensor-pipe instructions (0 when not profiled), ``tensor_key``
    the tensor peak each launch uses (``kernel_precision.tensor_precision``),
    ``tensor_flop`` their FLOP once the source's FLOP per instruction is known
    (``with_tensor_flop``; zeros until then).
    """

    time_s: np.ndarray
    inst: dict[tuple[str, str], np.ndarray]
    l1_bytes: np.ndarray
    l2_bytes: np.ndarray
    dram_bytes: np.ndarray
    shared_bytes: np.ndarray
    shared_wavefronts: np.ndarray
    threads_per_inst: np.ndarray
    tensor_inst: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tensor_key: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    tensor_flop: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        n = len(self.time_s)
        if len(self.tensor_inst) != n:
            self.tensor_inst = np.zeros(n)
        if len(self.tensor_key) != n:
            self.tensor_key = np.full(n, "fp16_tensor", dtype=object)
        if len(self.tensor_flop) != n:
            self.tensor_flop = np.zeros(n)

    def with_tensor_flop(self, flop_per_inst: float) -> KernelInputs:
        """The same inputs with ``tensor_flop = tensor_inst x flop_per_inst``."""
        from dataclasses import replace

        return replace(self, tensor_flop=self.tensor_inst * flop_per_inst)

    @classmethod
    def from_metrics(cls, metrics: KernelMetrics) -> KernelInputs:
        """Inputs from a metrics table, with the documented fallbacks for absent metrics."""
        t = metrics.table
        n = len(t)

        def col(name: str, default: float) -> np.ndarray:
            a = t[name].to_numpy(dtype=np.float64, copy=True) if name in t else np.full(n, default)
            return np.where(np.isfinite(a), a, default)

        inst = {}
        for p in MODEL_PRECISIONS:
            for o in FLOP_OPS:
                inst[(p, o)] = col(f"{p}_{o}_inst", 0.0)
        shared = col("shared_bytes", 0.0)
        wf = t["shared_wavefronts"].to_numpy(dtype=np.float64) if "shared_wavefronts" in t else np.full(n, np.nan)
        if "shared_bank_conflicts" in t:  # wavefronts = ideal (bytes/128) + one per conflict
            conf = t["shared_bank_conflicts"].to_numpy(dtype=np.float64)
            est = shared / SHARED_BYTES_PER_CYCLE_MAX + conf
            wf = np.where(np.isfinite(wf), wf, np.where(np.isfinite(conf), est, np.nan))
        from nodecast.models.kernel_precision import tensor_precision

        return cls(
            time_s=t["duration_s"].to_numpy(dtype=np.float64),
            inst=inst,
            l1_bytes=col("l1_bytes", 0.0),
            l2_bytes=col("l2_bytes", 0.0),
            dram_bytes=col("dram_bytes", 0.0),
            shared_bytes=shared,
            shared_wavefronts=wf,
            threads_per_inst=col("threads_per_inst", WARP_SIZE),
            tensor_inst=col("tensor_inst", 0.0),
            tensor_key=np.array([tensor_precision(str(k)) for k in t["kernel"]], dtype=object),
        )

    def __len__(self) -> int:
        return len(self.time_s)

    def flop(self, inst: Mapping[tuple[str, str], np.ndarray] | None = None) -> np.ndarray:
        """FLOP per launch: 2 per FMA, 1 per ADD or MUL, summed over precisions, plus the tensor FLOP."""
        inst = self.inst if inst is None else inst
        total = self.tensor_flop.astype(np.float64, copy=True)
        for p in MODEL_PRECISIONS:
            total += 2.0 * inst[(p, "fma")] + inst[(p, "add")] + inst[(p, "mul")]
        return total

    def hits(self) -> dict[str, np.ndarray]:
        """Bytes that hit each level (eq. 4's N_m), from the traversing counters, clipped at 0."""
        return {
            "dram": self.dram_bytes,
            "l2": np.maximum(self.l2_bytes - self.dram_bytes, 0.0),
            "l1": np.maximum(self.l1_bytes - self.l2_bytes, 0.0),
            "shared": self.shared_bytes,
        }

    def traversing(self) -> dict[str, np.ndarray]:
        """N+_m: bytes traversing each projection level (the numerators of eqs. 6-8; eq. 10)."""
        h = self.hits()
        dram = h["dram"]
        l2 = h["l2"] + dram
        l1 = h["l1"] + h["shared"] + l2
        return {"dram": dram, "l2": l2, "l1": l1}


# -- ceilings on one GPU --------------------------------------------------------------
@dataclass
class Ceilings:
    """A kernel's roofline with ceilings on one GPU (arrays over launches).

    ``perf_mix`` (eq. 2) and ``perf_ceil`` (eq. 3) in FLOP/s (NaN without
    FLOP); ``t_compute = FLOP / perf_ceil``; ``t_level`` per-level times of
    eqs. 4-5; ``bw_ceil`` (eqs. 6-8) in bytes/s; ``tau[m] = N+_m / bw_ceil[m]``;
    ``roof_time[m] = max(tau[m], t_compute)`` = FLOP / roofline_m(OI_m).
    """

    perf_mix: np.ndarray
    perf_ceil: np.ndarray
    t_compute: np.ndarray
    t_level: dict[str, np.ndarray]
    bw_ceil: dict[str, np.ndarray]
    tau: dict[str, np.ndarray]
    roof_time: dict[str, np.ndarray]


def ceilings(inp: KernelInputs, inst: Mapping[tuple[str, str], np.ndarray], fig: GpuFigures) -> Ceilings:
    """Eqs. 2-8 for every launch on the GPU described by ``fig``."""
    n = len(inp)
    warp = np.clip(inp.threads_per_inst, 1e-9, WARP_SIZE) / WARP_SIZE
    t_compute = np.zeros(n)
    mix_time = np.zeros(n)  # sum of FLOP_p / Perf_mix_p, for the FLOP-weighted Perf_mix
    flop = np.zeros(n)
    with np.errstate(all="ignore"):
        for p in MODEL_PRECISIONS:
            n_fma, n_add, n_mul = inst[(p, "fma")], inst[(p, "add")], inst[(p, "mul")]
            n_all = n_fma + n_add + n_mul
            used = n_all > 0
            if not used.any():
                continue
            who = f"{int(used.sum())} launches execute {p.upper()} instructions"
            p_fma, p_am = fig.peak(p, "fma", who), fig.peak(p, "addmul", who)
            mix = p_fma * n_fma / n_all + p_am * (n_add + n_mul) / n_all  # eq. 2
            f_p = 2.0 * n_fma + n_add + n_mul
            mix_time += np.where(used, f_p / mix, 0.0)
            t_compute += np.where(used, f_p / (warp * mix), 0.0)  # eq. 3
            flop += f_p
        perf_mix = np.where(flop > 0, flop / mix_time, np.nan)
        perf_ceil = np.where(flop > 0, flop / t_compute, np.nan)
    tensor = inp.tensor_flop > 0
    if tensor.any():
        for key in sorted(set(inp.tensor_key[tensor].tolist())):
            sel = tensor & (inp.tensor_key == key)
            if key not in fig.tensor:
                raise InputError(f"no {key.upper()} peak for {fig.model} ({int(sel.sum())} launches ran tensor-pipe "
                                 "instructions)", path=fig.path, key=f"peak_flops.{key}",
                                 hint="Add the tensor peak to the GPU's data sheet or machine file")
            t_compute = t_compute + np.where(sel, inp.tensor_flop / fig.tensor[key], 0.0)
    hits = inp.hits()
    any_shared = bool((hits["shared"] > 0).any())
    t_level = {}
    for lv in ("dram", "l2", "l1"):
        needed = hits[lv] > 0
        t_level[lv] = (hits[lv] / fig.bw(lv, f"eq. 4: {int(needed.sum())} launches have bytes served by {lv.upper()}")
                       if needed.any() else np.zeros(n))
    if any_shared:
        bw_shm = fig.bw("shared", f"eq. 5: {int((hits['shared'] > 0).sum())} launches use shared memory")
        wf = inp.shared_wavefronts
        # eq. 5: N_shm / N_shm_pc * 128 / BW with N_shm_pc = N_shm / wavefronts; conflict-free when unknown
        cycles = np.where(np.isfinite(wf), wf, hits["shared"] / SHARED_BYTES_PER_CYCLE_MAX)
        t_level["shared"] = cycles * SHARED_BYTES_PER_CYCLE_MAX / bw_shm
    else:
        t_level["shared"] = np.zeros(n)
    tau = {
        "dram": t_level["dram"],
        "l2": t_level["l2"] + t_level["dram"],
        "l1": t_level["l1"] + t_level["shared"] + t_level["l2"] + t_level["dram"],
    }
    trav = inp.traversing()
    with np.errstate(all="ignore"):
        bw_ceil = {lv: np.where(tau[lv] > 0, trav[lv] / tau[lv], np.nan) for lv in PROJECTION_LEVELS}
    roof_time = {lv: np.maximum(tau[lv], t_compute) for lv in PROJECTION_LEVELS}
    return Ceilings(perf_mix, perf_ceil, t_compute, t_level, bw_ceil, tau, roof_time)


# -- the projection --------------------------------------------------------------------
_BOUND_NAMES = np.array(["compute", "dram", "l2", "l1", "shared", "none"], dtype=object)


def _bound(c: Ceilings) -> np.ndarray:
    stack = np.vstack([c.t_compute, c.t_level["dram"], c.t_level["l2"], c.t_level["l1"], c.t_level["shared"]])
    idx = np.argmax(stack, axis=0)
    idx = np.where(stack.max(axis=0) > 0, idx, 5)
    return _BOUND_NAMES[idx]


@dataclass
class RooflineProjection:
    """Everything the model computed for a set of launches (arrays over launches).

    ``time_level[m]`` is eq. 9's projected time through level m; ``low_s`` /
    ``high_s`` the interval; ``time_s`` the projected time (FLOP over the
    midpoint of the performance interval). ``efficiency[m]`` is the source
    efficiency ``Perf_s / roofline_s,m(OI_s,m)`` before the cap at 1.
    """

    inputs: KernelInputs
    source: GpuFigures
    target: GpuFigures
    flop_s: np.ndarray
    flop_t: np.ndarray
    oi_s: dict[str, np.ndarray]
    oi_t: dict[str, np.ndarray]
    perf_s: np.ndarray
    ceil_s: Ceilings
    ceil_t: Ceilings
    efficiency: dict[str, np.ndarray]
    time_level: dict[str, np.ndarray]
    low_s: np.ndarray
    high_s: np.ndarray
    time_s: np.ndarray
    bound_s: np.ndarray
    bound_t: np.ndarray
    notes: list[str] = field(default_factory=list)

    def perf_level(self) -> dict[str, np.ndarray]:
        """Eq. 9's projected performance per level, FLOP/s (NaN without FLOP)."""
        with np.errstate(all="ignore"):
            return {lv: np.where(self.flop_t > 0, self.flop_t / self.time_level[lv], np.nan)
                    for lv in PROJECTION_LEVELS}

    def frame(self) -> pd.DataFrame:
        """One row per launch: inputs, ceilings on both GPUs, the projection (SI units)."""
        d: dict[str, object] = {
            "source_s": self.inputs.time_s,
            "flop": self.flop_s,
            "flop_target": self.flop_t,
            "perf_source_flops": self.perf_s,
            "perf_ceil_source_flops": self.ceil_s.perf_ceil,
            "perf_ceil_target_flops": self.ceil_t.perf_ceil,
        }
        for lv in PROJECTION_LEVELS:
            d[f"oi_{lv}_flop_per_byte"] = self.oi_s[lv]
        for lv in PROJECTION_LEVELS:
            d[f"bw_ceil_{lv}_source_bps"] = self.ceil_s.bw_ceil[lv]
            d[f"bw_ceil_{lv}_target_bps"] = self.ceil_t.bw_ceil[lv]
        for lv in PROJECTION_LEVELS:
            d[f"efficiency_{lv}"] = self.efficiency[lv]
            d[f"time_{lv}_s"] = self.time_level[lv]
        d.update({"low_s": self.low_s, "high_s": self.high_s, "time_s": self.time_s,
                  "bound_source": self.bound_s, "bound_target": self.bound_t})
        return pd.DataFrame(d)


def project_kernels(
    inp: KernelInputs,
    source: GpuFigures,
    target: GpuFigures,
    target_inst: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> RooflineProjection:
    """Eqs. 1-10 for every launch: ceilings on both GPUs and the eq.-9 interval.

    ``target_inst`` are the instruction counts on the target when the SASS
    comparison changed them (default: the source counts).

    A cache level (L2, L1, shared memory) that some launch uses but whose
    bandwidth one GPU lacks is bounded by its neighbours
    (``GpuFigures.bracketed``): the projection runs with every unknown level
    of the target at its slowest and of the source at its fastest (the
    longest times), and the other way round (the shortest); the interval
    is the union of both, so it holds every projection a value between the
    bounds gives, and a note per level says so. The per-launch detail
    (ceilings, per-level times, bound) is the slow-target run's.
    """
    hits = inp.hits()
    gaps = [(side, fig, fig.unknown_levels(hits)) for side, fig in (("source", source), ("target", target))]
    if not any(levels for _, _, levels in gaps):
        return _project(inp, source, target, target_inst)
    (s_slow, s_fast), (t_slow, t_fast) = (fig.bracketed(list(levels)) for _, fig, levels in gaps)
    longest = _project(inp, s_fast, t_slow, target_inst)
    shortest = _project(inp, s_slow, t_fast, target_inst)
    with np.errstate(all="ignore"):
        low = np.fmin(longest.low_s, shortest.low_s)
        high = np.fmax(longest.high_s, shortest.high_s)
        mean = np.clip(2.0 / (1.0 / low + 1.0 / high), low, high)
    notes = [_unknown_note(lv, side, fig, n, len(inp)) for side, fig, levels in gaps for lv, n in levels.items()]
    return replace(longest, source=source, target=target, low_s=low, high_s=high, time_s=mean,
                   notes=longest.notes + notes)


def _unknown_note(level: str, side: str, fig: GpuFigures, n: int, total: int) -> str:
    """Why the interval of ``n`` launches is wider: ``level``'s bandwidth is unknown on the ``side`` GPU."""
    name = _LEVEL_NAMES[level]
    outer = next(o for o in _OUTSIDE[level] if o in fig.bandwidth)
    inner = next((i for i in _INSIDE[level] if i in fig.bandwidth), None)
    upper = (f"{_LEVEL_NAMES[inner]}'s {fig.bandwidth[inner] / 1e9:,.0f} GB/s (the level inside it)" if inner
             else "no upper limit (no level inside it is known)")
    return Note(f"{name} bandwidth unknown for {fig.model} ({fig.machine}, the {side}), which {n} of "
                f"{plural(total, 'launch', 'launches')} use: projected with it anywhere between "
                f"{_LEVEL_NAMES[outer]}'s {fig.bandwidth[outer] / 1e9:,.0f} GB/s (the level outside it) and {upper}; "
                "interval widened to cover both ends (give the level's bandwidth to narrow it)", LEVELS_UNKNOWN)


def _project(
    inp: KernelInputs,
    source: GpuFigures,
    target: GpuFigures,
    target_inst: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> RooflineProjection:
    """``project_kernels`` for figures that give every level the launches use."""
    notes: list[str] = []
    t_inst = inp.inst if target_inst is None else target_inst
    flop_s = inp.flop()
    flop_t = inp.flop(t_inst)
    c_s = ceilings(inp, inp.inst, source)
    c_t = ceilings(inp, t_inst, target)
    trav = inp.traversing()
    with np.errstate(all="ignore"):
        oi_s = {lv: np.where(trav[lv] > 0, flop_s / trav[lv], np.inf) for lv in PROJECTION_LEVELS}
        oi_t = {lv: np.where(trav[lv] > 0, flop_t / trav[lv], np.inf) for lv in PROJECTION_LEVELS}
        perf_s = flop_s / inp.time_s
    time_level = {}
    eff = {}
    capped = np.zeros(len(inp), dtype=bool)
    for lv in PROJECTION_LEVELS:
        r_s, r_t = c_s.roof_time[lv], c_t.roof_time[lv]
        with np.errstate(all="ignore"):
            e = np.where(r_s > 0, r_s / inp.time_s, np.nan)  # Perf_s / roofline_s,m(OI_s,m)
        eff[lv] = e
        capped |= e > 1.0
        e_used = np.minimum(e, 1.0)
        with np.errstate(all="ignore"):
            time_level[lv] = np.where(np.isfinite(e_used) & (e_used > 0), r_t / e_used, np.nan)  # eq. 9
    stack = np.vstack([time_level[lv] for lv in PROJECTION_LEVELS])
    nothing = np.all(np.isnan(stack), axis=0)
    with np.errstate(all="ignore"):
        low = np.where(nothing, inp.time_s, np.nanmin(np.where(nothing, 0.0, stack), axis=0))
        high = np.where(nothing, inp.time_s, np.nanmax(np.where(nothing, 0.0, stack), axis=0))
        mean = np.where(nothing, inp.time_s, 2.0 / (1.0 / low + 1.0 / high))
        mean = np.clip(mean, low, high)  # the harmonic mean of equal bounds can round one ulp outside
    if capped.any():
        notes.append(f"{int(capped.sum())} of {plural(len(capped), 'launch', 'launches')} ran faster on the source "
                     "than their ceiling at some "
                     "level (efficiency > 1: the measured maxima are below what they achieved); "
                     "efficiency capped at 1 so the projection stays under the target's roofline")
    if nothing.any():
        k = int(nothing.sum())
        notes.append(f"{k} of {plural(len(nothing), 'launch', 'launches')} {'has' if k == 1 else 'have'} no FLOP "
                     "and no memory traffic: projected with their source time")
    if target_inst is None:
        notes.append("target FLOP = source FLOP (equal instruction counts assumed; no SASS comparison)")
    return RooflineProjection(
        inputs=inp, source=source, target=target, flop_s=flop_s, flop_t=flop_t, oi_s=oi_s, oi_t=oi_t,
        perf_s=perf_s, ceil_s=c_s, ceil_t=c_t, efficiency=eff, time_level=time_level,
        low_s=low, high_s=high, time_s=mean, bound_s=_bound(c_s), bound_t=_bound(c_t), notes=notes)


def _tensor_inputs(inp: KernelInputs, src: GpuFigures) -> tuple[KernelInputs, np.ndarray, list[str]]:
    """Tensor FLOP of the launches that ran tensor-pipe instructions, where the source's FLOP per
    instruction is known; else those launches, to project by the tensor peak ratio (``_tensor_by_ratio``)."""
    tensor = inp.tensor_inst > 0
    none = np.zeros(len(inp), dtype=bool)
    if not tensor.any():
        return inp, none, []
    keys = ", ".join(sorted({k.upper() for k in inp.tensor_key[tensor].tolist()}))
    factor = TENSOR_FLOP_PER_INST.get(src.target or "")
    if factor:
        return inp.with_tensor_flop(factor), none, [
            f"{int(tensor.sum())} of {plural(len(inp), 'launch', 'launches')} ran tensor-pipe instructions: "
            f"{factor:g} FLOP each on {src.target} (TENSOR_FLOP_PER_INST), computed at the {keys} tensor peaks"]
    return inp, tensor, [
        f"{int(tensor.sum())} of {plural(len(inp), 'launch', 'launches')} ran tensor-pipe instructions, whose FLOP "
        f"per instruction nodecast does not know on {src.target or 'a GPU without data sheet'}: projected "
        f"compute-bound at the {keys} tensor peak ratio"]


def _tensor_by_ratio(proj: RooflineProjection, rows: np.ndarray, src: GpuFigures, tgt: GpuFigures) -> list[str]:
    """Set the launches ``rows`` to ``T_s x P_tensor,s / P_tensor,t`` (interval of one point); notes for the
    launches whose tensor peak one GPU lacks (they keep the roofline's vector-only projection)."""
    notes = []
    for key in sorted(set(proj.inputs.tensor_key[rows].tolist())):
        sel = rows & (proj.inputs.tensor_key == key)
        ps, pt = src.tensor.get(key), tgt.tensor.get(key)
        if not ps or not pt:
            notes.append(f"{int(sel.sum())} tensor launches ({key.upper()}): no such peak for "
                         f"{src.model if not ps else tgt.model}; projected without their tensor work")
            continue
        t = proj.inputs.time_s[sel] * ps / pt
        proj.time_s[sel], proj.low_s[sel], proj.high_s[sel] = t, t, t
    return notes


def figures_notes(source: GpuFigures, target: GpuFigures) -> list[str]:
    """Notes naming the figures used on both GPUs and their origin."""
    return [f"source {source.describe()}", f"target {target.describe()}"]


def clock_note(metrics: KernelMetrics, machine: Machine) -> str | None:
    """A note when the profiled SM clock differs from the source machine's clock by > 5 %."""
    if "sm_clock_hz" not in metrics.table:
        return None
    clk = float(np.nanmedian(metrics.table["sm_clock_hz"].to_numpy()))
    if not math.isfinite(clk) or clk <= 0:
        return None
    ratio = clk / machine.gpu.clock_hz
    if abs(ratio - 1.0) <= 0.05:
        return None
    return (f"kernels ran at a median SM clock of {clk / 1e9:.3g} GHz under the profiler, "
            f"{ratio:.0%} of {machine.name}'s {machine.gpu.clock_hz / 1e9:.3g} GHz "
            "(ncu locks clocks to base by default): source times and efficiencies are those of that clock")


# -- the registered model -----------------------------------------------------------------
@register
class RooflineModel:
    """Hierarchical roofline with kernel-specific ceilings (Van Lanker et al., eqs. 1-10).

    The model needs Nsight Compute metrics, which a Trace does not carry: give
    them to the constructor (``RooflineModel(metrics)``), with an optional
    :class:`nodecast.models.sass.SassComparison` that changes the target's
    FLOP counts. Trace kernel rows are joined to metric rows by kernel name
    and launch order (``nodecast.traces.ncu.join_trace``); built from the
    registry without metrics, the model accepts no op.
    """

    name: ClassVar[str] = "roofline"
    kind: ClassVar[str] = "kernel"
    baseline: ClassVar[bool] = False
    description: ClassVar[str] = ("hierarchical roofline with kernel-specific ceilings, eq.-9 interval "
                                  "over L1/L2/DRAM (Van Lanker et al., Euro-Par 2024); needs ncu metrics")

    def __init__(self, metrics: KernelMetrics | None = None, sass: SassComparison | None = None) -> None:
        self.metrics = metrics
        self.sass = sass

    def accepts(self, trace: Trace) -> np.ndarray:
        """Kernel ops that have a metrics row."""
        if self.metrics is None:
            return np.zeros(len(trace), dtype=bool)
        return join_trace(self.metrics, trace) >= 0

    def analyze(self, trace: Trace, source: Machine, target: Machine) -> tuple[RooflineProjection, np.ndarray]:
        """The full projection of the trace's kernels and, per projected launch, its trace row."""
        if self.metrics is None:
            raise InputError("the roofline model needs Nsight Compute metrics", key="roofline",
                             hint="Use `nodecast kernels METRICS.csv` or RooflineModel(read_ncu_csv(...))")
        join = join_trace(self.metrics, trace)
        rows = np.flatnonzero(join >= 0)
        sub = self.metrics.take(join[rows])
        inp = KernelInputs.from_metrics(sub)
        src, tgt = gpu_figures(source), gpu_figures(target, reference=source)
        inp, by_ratio, tensor_notes = _tensor_inputs(inp, src)
        target_inst = None
        sass_notes: list[str] = []
        if self.sass is not None:
            target_inst, sass_notes = self.sass.target_inst(sub, inp.inst)
        proj = project_kernels(inp, src, tgt, target_inst)
        tensor_notes += _tensor_by_ratio(proj, by_ratio, src, tgt)
        notes = figures_notes(src, tgt) + list(self.metrics.notes) + sass_notes + proj.notes + tensor_notes
        clk = clock_note(self.metrics, source)
        if clk:
            notes.append(clk)
        proj.notes = notes
        return proj, rows

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Projected kernel times (mean of the interval) and the interval bounds; NaN for other ops."""
        n = len(trace)
        time_s, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        if self.metrics is None:
            return ModelResult(self.name, time_s, low, high,
                               ["no Nsight Compute metrics given: no kernel projected"])
        proj, rows = self.analyze(trace, source, target)
        time_s[rows], low[rows], high[rows] = proj.time_s, proj.low_s, proj.high_s
        return ModelResult(self.name, time_s, low, high, proj.notes)


# -- projecting a whole metrics table with every kernel model ----------------------------
def short_kernel_name(name: str, width: int = 72) -> str:
    """A kernel name for tables: no ``void``, no parameter list, nested template arguments as ``<…>``.

    ``void f<A<1>, B<float>, int>(int*)`` -> ``f<A<…>, B<…>, int>``; cut to ``width`` characters.
    """
    from nodecast.traces.ncu import base_kernel_name

    s = base_kernel_name(name) or name
    out, depth = [], 0
    for c in s:
        if c == "<":
            depth += 1
            if depth == 2:
                out.append("<…")
            elif depth < 2:
                out.append(c)
        elif c == ">":
            if depth <= 2:
                out.append(">")
            depth -= 1
        elif depth < 2:
            out.append(c)
    s = "".join(out)
    return s if len(s) <= width else s[: width - 1] + "…"


def short_kernel_labels(names: Sequence[str], width: int = 72) -> dict[str, str]:
    """A table label per kernel name: ``short_kernel_name``, numbered where different names shorten alike.

    Two template instances that differ only in nested arguments
    (``Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<…>, long>``)
    get `` #1``, `` #2``... in the order the names come (first launch first),
    so that no two kernels share a row label; the full names stay in the
    ``kernel`` column of ``KernelProjection.launches``.
    """
    unique = list(dict.fromkeys(names))
    short = {n: short_kernel_name(n, width) for n in unique}
    groups: dict[str, list[str]] = {}
    for n in unique:
        groups.setdefault(short[n], []).append(n)
    labels = {}
    for label, members in groups.items():
        for i, n in enumerate(members, 1):
            labels[n] = label if len(members) == 1 else f"{label} #{i}"
    return labels


def aggregate_launches(metrics: KernelMetrics, rows: np.ndarray | list[int]) -> KernelMetrics:
    """One launch standing for the selected launches: counts, bytes and durations summed.

    ``threads_per_inst`` is averaged with the launches' FP instruction counts
    as weights (ncu's ratio is per instruction). Used to draw one roofline
    point for all launches of a kernel.
    """
    t = metrics.table.iloc[np.asarray(rows)]
    row: dict[str, object] = {"kernel": t["kernel"].iat[0], "occurrence": 0, "id": int(t["id"].iat[0])}
    for c in t.columns:
        if c in row or c in ("threads_per_inst", "sm_clock_hz"):
            continue
        vals = t[c].to_numpy(dtype=np.float64)
        row[c] = float(np.sum(vals)) if np.isfinite(vals).all() else np.nan
    if "threads_per_inst" in t:
        w = sum(t[f"{p}_{o}_inst"].fillna(0).to_numpy() for p in MODEL_PRECISIONS for o in FLOP_OPS)
        a = t["threads_per_inst"].to_numpy(dtype=np.float64)
        ok = np.isfinite(a)
        row["threads_per_inst"] = (float(np.average(a[ok], weights=w[ok])) if ok.any() and w[ok].sum() > 0
                                   else (float(np.nanmean(a)) if ok.any() else np.nan))
    if "sm_clock_hz" in t:
        row["sm_clock_hz"] = float(np.nanmedian(t["sm_clock_hz"].to_numpy(dtype=np.float64)))
    return KernelMetrics(pd.DataFrame([row]), metrics.sources, metrics.present, list(metrics.notes))


@dataclass
class KernelProjection:
    """Every kernel model's projection of a metrics table (rows = launches, in metrics order).

    ``results[name]`` is aligned with the metrics rows; ``roofline`` holds the
    roofline model's full detail when it ran.
    """

    metrics: KernelMetrics
    source: Machine
    target: Machine
    results: dict[str, ModelResult]
    roofline: RooflineProjection | None

    def launches(self) -> pd.DataFrame:
        """One row per launch: identity, source time, roofline detail, ``<model>_s`` per model (SI units).

        ``kernel`` is the full name, ``label`` the short one the tables show
        (``short_kernel_labels``: unique, numbered where names shorten alike).
        """
        t = self.metrics.table
        labels = short_kernel_labels(t["kernel"].tolist())
        df = pd.DataFrame({"kernel": t["kernel"], "label": t["kernel"].map(labels), "occurrence": t["occurrence"],
                           "id": t["id"], "source_s": t["duration_s"]})
        if self.roofline is not None:
            detail = self.roofline.frame().drop(columns=["source_s", "time_s"])
            detail = detail.rename(columns={"low_s": "roofline_low_s", "high_s": "roofline_high_s"})
            df = pd.concat([df, detail], axis=1)
        for name, res in self.results.items():
            df[f"{name}_s"] = res.time_s
        return df

    def summary(self) -> pd.DataFrame:
        """One row per kernel name: launches, summed source and projected times, dominant bound."""
        df = self.launches()
        agg: dict[str, tuple[str, str]] = {"label": ("label", "first"), "launches": ("source_s", "size"),
                                           "source_s": ("source_s", "sum")}
        cols = ["source_s"]
        if self.roofline is not None:
            agg["roofline_low_s"] = ("roofline_low_s", "sum")
            agg["roofline_high_s"] = ("roofline_high_s", "sum")
        for name in self.results:
            agg[f"{name}_s"] = (f"{name}_s", "sum")
            cols.append(f"{name}_s")
        out = df.groupby("kernel", sort=False).agg(**agg).reset_index()
        if self.roofline is not None:
            share = df.groupby(["kernel", "bound_target"], sort=False)["source_s"].sum().reset_index()
            top = share.sort_values("source_s", ascending=False).drop_duplicates("kernel")
            out.insert(4, "bound", out["kernel"].map(dict(zip(top["kernel"], top["bound_target"], strict=True))))
        return out

    def total(self) -> dict[str, object]:
        """Sums over every launch: ``launches``, ``source_s``, the roofline bounds and ``<model>_s``.

        A model's sum is NaN when it left a launch unprojected, so that a total
        never covers fewer launches than the source time beside it.
        """
        df = self.launches()
        out: dict[str, object] = {"kernel": "total", "label": "total", "launches": len(df),
                                  "source_s": float(df["source_s"].sum())}
        cols = [c for c in ("roofline_low_s", "roofline_high_s") if c in df] + [f"{n}_s" for n in self.results]
        for c in cols:
            out[c] = float(df[c].sum()) if df[c].notna().all() else float("nan")
        return out

    def notes(self) -> list[str]:
        """The models' notes, prefixed with the model name, without repeats."""
        out: list[str] = []
        for name, res in self.results.items():
            for n in res.notes:
                line = f"[{name}] {n}"
                if line not in out:
                    out.append(line)
        return out


def project_metrics(
    metrics: KernelMetrics,
    source: Machine,
    target: Machine,
    models: list[str] | None = None,
    sass: SassComparison | None = None,
) -> KernelProjection:
    """Project every launch of ``metrics`` with the kernel models (all registered ones by default).

    The library form of ``nodecast kernels``. A Trace of the launches is built
    from the metrics (``trace_from_metrics``), and each kernel model receives
    the metrics (and ``sass``, for the roofline model) before projecting.
    """
    import nodecast.models.kernel_baselines  # noqa: F401  (registers the baselines)
    from nodecast.models.base import get_models
    from nodecast.traces.ncu import trace_from_metrics

    instances = get_models(models, kind="kernel" if models is None else None)
    if models is None:  # with metrics for every launch, the default model is the roofline: not shown twice
        instances = [m for m in instances if m.name != "default-kernel"]
    for m in instances:
        if m.kind != "kernel":
            raise InputError(f"model {m.name!r} is a {m.kind} model, not a kernel model", key="--models")
        if hasattr(m, "metrics"):
            m.metrics = metrics  # type: ignore[attr-defined]
        if hasattr(m, "sass"):
            m.sass = sass  # type: ignore[attr-defined]
    trace = trace_from_metrics(metrics)
    results: dict[str, ModelResult] = {}
    detail: RooflineProjection | None = None
    for m in instances:
        if isinstance(m, RooflineModel):
            proj, rows = m.analyze(trace, source, target)
            full = np.full(len(trace), np.nan)
            lo, hi, mean = full.copy(), full.copy(), full.copy()
            lo[rows], hi[rows], mean[rows] = proj.low_s, proj.high_s, proj.time_s
            results[m.name] = ModelResult(m.name, mean, lo, hi, proj.notes)
            detail = proj if len(rows) == len(trace) else None
        else:
            results[m.name] = m.project(trace, source, target)
    return KernelProjection(metrics, source, target, results, detail)
