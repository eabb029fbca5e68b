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

GPU figures (each GPU's maxima and where they come from): ``nodecast.models.roofline_figures``;
the equations over arrays of launches: ``nodecast.models.roofline_equations``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult
from nodecast.models.roofline_equations import KernelInputs, RooflineProjection, project_kernels
from nodecast.models.roofline_figures import GpuFigures, gpu_figures
from nodecast.traces.ncu import KernelMetrics, join_trace
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.models.sass import SassComparison
    from nodecast.traces.trace import Trace

#: FLOP per warp-level tensor-pipe instruction (``sm__inst_executed_pipe_tensor``) by source target. Volta:
#: one HMMA.884 is an 8x8x4 step of a warp quad-pair, 16 of them make an m16n16k16 mma (16x16x16x2 = 8192 FLOP),
#: so 512 FLOP each -- NERSC's V100 hierarchical roofline counts ``512 x sm__inst_executed_pipe_tensor.sum``
#: (../shared/reference/FORMATS.md C.1). Other architectures issue other shapes and are left out rather than guessed.
TENSOR_FLOP_PER_INST: dict[str, float] = {"sm_70": 512.0, "sm_72": 512.0}


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
