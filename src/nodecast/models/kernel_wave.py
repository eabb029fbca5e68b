"""Wave scaling: a kernel's time on another GPU from its launch configuration and both data sheets, no metrics.

Habitat (Yu, Gao, Golikov, Pekhimenko, "Habitat: A Runtime-Based
Computational Performance Predictor for Deep Neural Network Training",
USENIX ATC 2021, pp. 503-521, section 3.3 "Wave scaling"). The paper's text
was not available to this project (only its abstract, in the stored copies of
https://usenix.org/conference/atc21/presentation/yu and
https://geoffreyyu.com/habitat), so what is cited here is the authors' code,
``geoffxy/habitat`` at commit 1d8b740efaede0296520a3cd925dac9becd9d198,
``analyzer/habitat/analysis/wave_scaling/roofline.py``, which computes, for a
kernel that fills at least one wave on either GPU (its statements, each
joined onto one line)::

    bandwidth_factor = (origin_device.mem_bandwidth_gb / dest_device.mem_bandwidth_gb)
    clock_factor = (origin_device.base_clock_mhz / dest_device.base_clock_mhz)
    sm_factor = (origin_device.num_sms / dest_device.num_sms)
    scaled_run_time_ns = (kernel.run_time_ns * math.pow(bandwidth_factor, gamma) *
                          math.pow(clock_factor, gamma_compl) * math.pow(sm_factor, gamma_compl))

with ``gamma_compl = 1 - gamma``, and, for a kernel that fills less than one
wave on both ("if it doesn't fill a single wave on the current device AND if
it doesn't fill a single wave on the destination device"),
``run_time * ((origin clock / dest clock) * (ceil(B / dest SMs) /
ceil(B / origin SMs)))^(1 - gamma)``; ``common.py`` takes the wave size as
``num_sms * thread_block_occupancy`` on each GPU, and ``_roofline_gamma`` takes
gamma from the kernel's FLOP efficiency and DRAM bytes against the
destination's ridge point R: ``gamma = -0.5/R * intensity + 1`` below R,
``0.5R / intensity`` above. That is, in the notation used here (s: the GPU the
trace comes from, t: the target; T in seconds, D DRAM bandwidth in bytes/s, C
clock in Hz, N SMs)::

    T_t = T_s * (D_s / D_t)^gamma * (C_s N_s / (C_t N_t))^(1 - gamma)            (Habitat's code)

nodecast computes, per launch and vectorized over the trace::

    T_t = ceil(B / W_t) / ceil(B / W_s) * T_s * (W't D_s / (W's D_t))^gamma * (R_s / R_t)^(1 - gamma)

with B the launch's thread blocks, W = resident blocks per SM x SMs (the wave)
and W' = min(B, W). Where it departs from that code (its ratios stand on the
full-wave limit: for B >> W, ceil(B/W_t)/ceil(B/W_s) -> W_s/W_t, and the two
equations agree when both GPUs hold the same blocks per SM and R is the clock):

* the wave quantization ceil(B/W) on each GPU, from the launch's theoretical
  occupancy on each GPU (``kernel_occupancy``: block size, registers per
  thread and shared memory per block of the trace, each GPU's per-SM limits
  from its data sheet), replaces the SM ratio; the memory term carries the
  blocks per wave, ``W't D_s / (W's D_t)``, so that with the wave count it
  scales a memory-bound kernel's time by D_s / D_t (W' = min(B, W): a kernel
  that does not fill one wave moves B blocks' bytes per wave on either GPU, so
  one equation covers the code's small-kernel case too);
* ``R_s / R_t``, the per-SM compute rate ratio (``kernel_ratios.per_sm_rate_ratio``):
  the clock (boost clock of a composed node; Habitat's code takes the base
  clock) times the issue-limited FP32 lanes per SM for FP32 kernels and the
  warp-scheduler issue slots per SM for kernels whose name says no precision,
  the per-SM peak ratio for FP64, FP16, BF16 and tensor-core kernels (the
  precision read from the kernel's name); Habitat's code uses the clock for
  every kernel;
* gamma without metrics. With a timeline only, nodecast takes gamma from the
  trace: the *memory share* ``u = F / (T_s D_s)`` of ``kernel_footprint`` (F
  the bytes copied to the GPU just before the kernel and back just after it,
  a lower bound of its DRAM traffic), ``gamma = min(u, 1)``. A kernel with no
  copy beside it (data resident on the GPU) has no evidence either way:
  ``gamma = 0.5`` (``DEFAULT_GAMMA``, the midpoint, so that its projection is
  the geometric mean of the memory-bound and compute-bound ones). Neither
  value was fitted to any data;
* a launch whose configuration the trace does not record (grid or block 0:
  ncu-derived traces) is taken to fill the GPU many times over:
  ``T_t = T_s (D_s/D_t)^gamma (C_s SMs_s / (C_t SMs_t))^(1-gamma)`` (times the
  issue-rate ratio above), Habitat's code's full-wave form.

The interval (``ModelResult.low_s``/``high_s``) spans gamma = 1 (DRAM-bandwidth
scaling with waves) to gamma = 0 (compute scaling with waves): the spread of
the two ratio baselines, with the wave quantization; the projection lies in it.
Every term but gamma is computed once per launch signature
(``kernel_signatures``), gamma and the power once per launch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult
from nodecast.models.kernel_footprint import kernel_rows, memory_share
from nodecast.models.kernel_occupancy import LaunchShape, launch_arrays, occupancy
from nodecast.models.kernel_signatures import launch_signatures
from nodecast.models.kernel_precision import Precisions
from nodecast.models.kernel_ratios import dram_bps, dram_ratio, per_sm_rate_ratio
from nodecast.words import plural
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
    launch shape, blocks: ``kernel_signatures``); ``index`` gives each launch's
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

    def times(self, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Projected seconds of launches that took ``t_s`` seconds on the source: at their gamma, and the interval
        (gamma = 0 and 1, the ends of the model's range; the point lies between them)."""
        compute_end = t_s * self._per_launch(self.wave_ratio * self.rate)
        memory_end = t_s * self._per_launch(self.wave_ratio * self.mem)
        point = compute_end * np.exp(self.gamma * self._per_launch(np.log(self.mem / self.rate)))
        low, high = np.minimum(compute_end, memory_end), np.maximum(compute_end, memory_end)
        np.clip(point, low, high, out=point)  # exp(g ln r) lies between 1 and r; only rounding could leave it
        return point, low, high


def wave_terms(trace: Trace, rows: np.ndarray, source: Machine, target: Machine, needed_by: str,
               t_s: np.ndarray | None = None) -> WaveTerms:
    """The terms of the wave-scaling equation (module docstring) for the kernel rows ``rows`` of ``trace``.

    ``t_s``: the rows' durations in seconds, when the caller has them. InputError when a machine gives no
    DRAM bandwidth (the callers turn it into a note).
    """
    notes: list[str] = []
    d_ratio, d_note = dram_ratio(source, target, needed_by)
    notes.append(d_note)
    cols = trace.columns
    sig = launch_signatures(cols, rows)
    if sig is None:  # a value outside the signature packing: every launch on its own
        index, weight, sub = None, np.ones(len(rows), dtype=np.int64), rows
    else:
        index, weight, sub = sig.index, sig.weight, rows[sig.first]
    arrays = launch_arrays(cols, sub)
    shape = LaunchShape.from_arrays(*arrays, grouped=sig is None)
    known = (cols["grid_x"][sub] > 0) & (cols["block_x"][sub] > 0)
    name_id = cols["name_id"][sub]
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
    if not known.all():
        notes.append(f"{plural(int(weight[~known].sum()), 'launch', 'launches')} without grid/block sizes in the trace: "
                     "taken to fill the GPU (waves scale with the SM count)")
    rate, rate_notes = per_sm_rate_ratio(source, target, Precisions(trace.names, name_id), weight)
    notes += rate_notes
    gamma = memory_share(trace, rows, dram_bps(source, needed_by), t_s)
    evidence = ~np.isnan(gamma)
    n_evidence = int(np.count_nonzero(evidence))
    np.minimum(gamma, 1.0, out=gamma)
    if n_evidence < len(gamma):
        gamma[~evidence] = DEFAULT_GAMMA
    if n_evidence:
        notes.append(f"gamma from the bytes copied to and from the GPU around the kernel for "
                     f"{plural(n_evidence, 'launch', 'launches')} (median {_median_unit(gamma[evidence]):.2f})")
    if n_evidence < len(gamma):
        notes.append(f"gamma = {DEFAULT_GAMMA} (no copy beside the kernel: no evidence of memory- or compute-"
                     f"boundness) for {plural(len(gamma) - n_evidence, 'launch', 'launches')}")
    return WaveTerms(wave_ratio, w_ratio * d_ratio, rate, gamma, notes, index)


def _median_unit(values: np.ndarray) -> float:
    """The median of values in [0, 1] to within 0.0005 (the notes print two decimals): from a histogram of 1,000
    bins (one ``np.bincount`` pass instead of ``np.median``'s partition of every launch)."""
    counts = np.bincount(np.minimum((values * 1000).astype(np.int64), 999), minlength=1000)
    half = np.searchsorted(np.cumsum(counts), (len(values) + 1) / 2)
    return (half + 0.5) / 1000


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
        time_s[rows], low[rows], high[rows] = terms.times(t_s)
        return ModelResult(self.name, time_s, low, high, terms.notes)
