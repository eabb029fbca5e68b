"""Wave scaling: a kernel's time on another GPU from its launch configuration and both data sheets, no metrics.

Habitat (Yu, Gao, Golikov, Pekhimenko, "Habitat: A Runtime-Based
Computational Performance Predictor for Deep Neural Network Training",
USENIX ATC 2021, section 3.3 "Wave scaling", eq. 1; reference implementation
geoffxy/habitat ``analyzer/habitat/analysis/wave_scaling/roofline.py``): a
kernel's B thread blocks run in waves of W blocks (W = resident blocks per SM x
SMs); a wave's time scales with the memory bandwidth D when memory-bound and
with the clock C when compute-bound, mixed by an exponent gamma in [0, 1]::

    T_t = ceil(B / W_t) / ceil(B / W_s) * T_s * (W_t D_s / (W_s D_t))^gamma * (C_s / C_t)^(1 - gamma)

(s: the GPU the trace comes from, t: the target; T in seconds, D in bytes/s,
C in Hz). nodecast computes, per launch and vectorized over the trace:

* W from the theoretical occupancy of the launch on each GPU
  (``kernel_occupancy``: block size, registers per thread and shared memory
  per block of the trace, each GPU's per-SM limits from its data sheet);
  Habitat does the same from its profiled kernels;
* ``W_t / W_s`` inside the memory term becomes ``W't / W's`` with
  ``W' = min(B, W)``: a kernel that does not fill one wave moves B blocks'
  bytes per wave on either GPU. Habitat's code special-cases these kernels
  instead (scaling them by the clock and blocks-per-SM ratio alone, to the
  power 1 - gamma); with W' the same equation covers both;
* ``C_s / C_t``: the clock ratio (the machines' clocks; a node composed from a
  data sheet has the sheet's boost clock), times the per-SM peak ratio for
  FP64, FP16, BF16 and tensor-core kernels (``kernel_ratios.per_sm_rate_ratio``,
  the precision read from the kernel's name); Habitat uses the clock ratio for
  every kernel;
* gamma without metrics. Habitat takes gamma from profiled metrics (the
  kernel's FLOP efficiency and DRAM bytes give its arithmetic intensity, and
  gamma falls from 1 to 0 as the intensity passes the ridge point). With a
  timeline only, nodecast takes gamma from the trace: the *memory share*
  ``u = F / (T_s D_s)`` of ``kernel_footprint`` (F the bytes copied to the GPU
  just before the kernel and back just after it, a lower bound of its DRAM
  traffic), ``gamma = min(u, 1)``. A kernel with no copy beside it (data
  resident on the GPU) has no evidence either way: ``gamma = 0.5``
  (``DEFAULT_GAMMA``, the midpoint, so that its projection is the geometric
  mean of the memory-bound and compute-bound ones). Neither value was fitted
  to any data;
* a launch whose configuration the trace does not record (grid or block 0:
  ncu-derived traces) is taken to fill the GPU many times over:
  ``T_t = T_s (D_s/D_t)^gamma (C_s SMs_s / (C_t SMs_t))^(1-gamma)``.

The interval (``ModelResult.low_s``/``high_s``) spans gamma = 1 (DRAM-bandwidth
scaling with waves) to gamma = 0 (compute scaling with waves): the spread of
the two ratio baselines, with the wave quantization; the projection lies in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult, register
from nodecast.models.kernel_footprint import memory_share
from nodecast.models.kernel_occupancy import LaunchShape, _groups, launch_arrays, occupancy
from nodecast.models.kernel_precision import Precisions
from nodecast.models.kernel_ratios import dram_bps, dram_ratio, per_sm_rate_ratio
from nodecast.report.words import plural
from nodecast.traces.kinds import OpKind

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

#: gamma of a kernel the trace gives no evidence about (no copy beside it): the midpoint of [0, 1].
DEFAULT_GAMMA = 0.5


class WaveTerms:
    """The terms of the wave-scaling equation (dimensionless): per launch signature, and gamma per launch.

    ``wave_ratio`` = ceil(B/W_t) / ceil(B/W_s), ``mem`` = W't D_s / (W's D_t),
    ``rate`` = C_s / C_t (x the per-SM peak ratio where the name says
    FP64/FP16/BF16/tensor) are computed once per launch signature (kernel name,
    launch shape, blocks: ``_signatures``); ``index`` gives each launch's
    signature (None: one per launch).
    """

    __slots__ = ("gamma", "index", "mem", "notes", "rate", "wave_ratio")

    def __init__(self, wave_ratio: np.ndarray, mem: np.ndarray, rate: np.ndarray, gamma: np.ndarray,
                 notes: list[str], index: np.ndarray | None = None) -> None:
        self.wave_ratio = wave_ratio
        self.mem = mem
        self.rate = rate
        self.gamma = gamma
        self.notes = notes
        self.index = index

    def _per_launch(self, values: np.ndarray) -> np.ndarray:
        return values if self.index is None else values[self.index]

    def scale(self, gamma: float | None = None) -> np.ndarray:
        """T_t / T_s for every launch, at the launches' gamma or at a given one (eq. 1)."""
        if gamma is None:
            # mem^g x rate^(1-g) = rate x (mem/rate)^g: one power instead of two
            return self._per_launch(self.wave_ratio * self.rate) * self._per_launch(self.mem / self.rate) ** self.gamma
        if gamma == 1.0:
            return self._per_launch(self.wave_ratio * self.mem)
        if gamma == 0.0:
            return self._per_launch(self.wave_ratio * self.rate)
        return self._per_launch(self.wave_ratio * self.mem**gamma * self.rate ** (1.0 - gamma))


def _signatures(arrays: tuple[np.ndarray, ...], known: np.ndarray,
                name_id: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """First launch of each distinct (name, launch shape, blocks, recorded or not) and each launch's index.

    ``arrays``: ``kernel_occupancy.launch_arrays``. Every term of eq. 1 but gamma depends on these alone; a
    trace of a million launches has a few thousand. None when a packed key would overflow.
    """
    blocks, threads, regs, smem, unknown_smem = arrays
    groups = _groups(threads, regs, smem, unknown_smem)
    if groups is None or len(name_id) == 0:
        return None
    import pandas as pd

    _, shape_code, _ = groups
    pair, pairs = pd.factorize((shape_code.astype(np.int64) << 32) | (name_id.astype(np.int64) + 1))
    blocks = np.where(known, blocks, 0)
    if float(blocks.max()) * len(pairs) >= 2.0**62:
        return None
    codes, uniq = pd.factorize(blocks * len(pairs) + pair)
    first = np.empty(len(uniq), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first, codes


def wave_terms(trace: Trace, rows: np.ndarray, source: Machine, target: Machine, needed_by: str,
               t_s: np.ndarray | None = None) -> WaveTerms:
    """The terms of eq. 1 for the kernel rows ``rows`` of ``trace`` (module docstring).

    ``t_s``: the rows' durations in seconds, when the caller has them. InputError when a machine gives no
    DRAM bandwidth (the callers turn it into a note).
    """
    notes: list[str] = []
    d_ratio, d_note = dram_ratio(source, target, needed_by)
    notes.append(d_note)
    cols = trace.columns
    arrays = launch_arrays(cols, rows)
    known_all = (cols["grid_x"][rows] > 0) & (cols["block_x"][rows] > 0)
    name_all = cols["name_id"][rows]
    sig = _signatures(arrays, known_all, name_all)
    if sig is None:
        index, weight = None, np.ones(len(rows), dtype=np.int64)
        shape, known, name_id = LaunchShape.from_arrays(*arrays), known_all, name_all
    else:
        first, index = sig
        weight = np.bincount(index, minlength=len(first))
        shape = LaunchShape.from_arrays(*(a[first] for a in arrays), grouped=False)
        known, name_id = known_all[first], name_all[first]
    n = len(shape)
    wave_ratio = np.full(n, source.gpu.sms / target.gpu.sms)
    w_ratio = np.full(n, target.gpu.sms / source.gpu.sms)
    limits_s, limits_t = source.gpu.limits, target.gpu.limits
    if limits_s is None or limits_t is None:
        missing = [m.name for m, lim in ((source, limits_s), (target, limits_t)) if lim is None]
        notes.append(f"no per-SM limits for {' and '.join(missing)} (a machine file without [gpu] sheet): every launch "
                     "taken to fill the GPU (waves scale with the SM count)")
    elif known.any():
        occ_s = occupancy(shape, limits_s, source.name, weight)
        occ_t = occupancy(shape, limits_t, target.name, weight)
        notes += occ_s.notes + [n_ for n_ in occ_t.notes if "cannot fit" in n_ or "capped" in n_]
        w_s = occ_s.blocks_per_sm * source.gpu.sms
        w_t = occ_t.blocks_per_sm * target.gpu.sms
        b = shape.blocks
        wave_ratio = np.where(known, np.ceil(b / w_t) / np.ceil(b / w_s), wave_ratio)
        w_ratio = np.where(known, np.minimum(b, w_t) / np.minimum(b, w_s), w_ratio)
        notes.append("registers and shared memory per block as recorded on the source, on both GPUs "
                     "(the target's compiler may allocate otherwise)")
    if not known_all.all():
        notes.append(f"{plural(int((~known_all).sum()), 'launch', 'launches')} without grid/block sizes in the trace: "
                     "taken to fill the GPU (waves scale with the SM count)")
    rate, rate_notes = per_sm_rate_ratio(source, target, Precisions(trace.names, name_id), weight)
    notes += rate_notes
    share = memory_share(trace, rows, dram_bps(source, needed_by), t_s)
    evidence = np.isfinite(share)
    gamma = np.where(evidence, np.minimum(np.nan_to_num(share), 1.0), DEFAULT_GAMMA)
    if evidence.any():
        notes.append(f"gamma from the bytes copied to and from the GPU around the kernel for "
                     f"{plural(int(evidence.sum()), 'launch', 'launches')} (median {np.median(gamma[evidence]):.2f})")
    if (~evidence).any():
        notes.append(f"gamma = {DEFAULT_GAMMA} (no copy beside the kernel: no evidence of memory- or compute-"
                     f"boundness) for {plural(int((~evidence).sum()), 'launch', 'launches')}")
    return WaveTerms(wave_ratio, w_ratio * d_ratio, rate, gamma, notes, index)


def kernel_rows(trace: Trace) -> np.ndarray:
    """Indices of the kernel ops."""
    return trace.memo(("kernel-rows",), lambda: np.flatnonzero(trace["kind"] == OpKind.KERNEL))


@register
class WaveScalingModel:
    """Habitat's wave scaling with gamma from the trace (module docstring); every kernel, no metrics needed."""

    name: ClassVar[str] = "wave-scaling"
    kind: ClassVar[str] = "kernel"
    baseline: ClassVar[bool] = False
    description: ClassVar[str] = ("kernel time x waves, occupancy, DRAM and clock ratios mixed by gamma "
                                  "(Habitat wave scaling, Yu et al., ATC 2021); no metrics needed")

    def accepts(self, trace: Trace) -> np.ndarray:
        """Every kernel op."""
        return trace["kind"] == OpKind.KERNEL

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Projected kernel times, interval gamma in [0, 1]; NaN for other ops (and a note when figures are missing)."""
        n = len(trace)
        time_s, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        rows = kernel_rows(trace)
        if rows.size == 0:
            return ModelResult(self.name, time_s, low, high, ["no kernel in the trace"])
        t_s = (trace["end_ns"][rows] - trace["start_ns"][rows]) * 1e-9
        try:
            terms = wave_terms(trace, rows, source, target, self.name, t_s)
        except InputError as exc:
            return ModelResult(self.name, time_s, low, high, [f"no kernel projected: {exc.reason}"])
        point = t_s * terms.scale()
        memory_end, compute_end = t_s * terms.scale(1.0), t_s * terms.scale(0.0)
        time_s[rows] = point
        low[rows] = np.minimum(np.minimum(memory_end, compute_end), point)
        high[rows] = np.maximum(np.maximum(memory_end, compute_end), point)
        return ModelResult(self.name, time_s, low, high, terms.notes)
