"""The default kernel model: the roofline where Nsight Compute metrics exist, else the learned model or wave scaling.

A user's trace may come with metrics for some kernels (``ncu`` run with a
``--kernel-name`` filter or ``--launch-count``), for all of them, or for none.
``default-kernel`` projects each kernel op with the best model that can:

* ``roofline`` (``nodecast.models.roofline``: hierarchical roofline with
  kernel-specific ceilings, Van Lanker et al.) for the ops joined to a metrics
  row (by kernel name and launch order, ``nodecast.traces.ncu.join_trace``),
  when both machines give the figures it needs (L1/L2 bandwidths: a machine
  file with ``[measured.gpu]`` or levels; a node composed from a data sheet
  has DRAM only) -- else a note says why and these ops go to wave scaling too;
* for every other kernel op, ``learned-kernel`` (``nodecast.models.kernel_learned``:
  data-sheet ratios weighted per family, fitted leave-one-GPU-out on public
  cross-GPU measurements) when both GPUs are NVIDIA Pascal or newer, and
  ``wave-scaling`` (``nodecast.models.kernel_wave``: Habitat's wave scaling
  with gamma from the trace) otherwise (``metrics_free_model``). The line is
  where the evidence is: on GPUs left out of its fit, the learned model beat
  wave scaling in every op family of NeuSight's and AIConfigurator's GPUs
  (Pascal to Blackwell), and lost to it on the kernel zoo's Kepler and
  Maxwell GPUs (``benchmarks/bench_kernel_learned.py --wave``,
  ``benchmarks/bench_kernel_zoo.py --learned``). It never saw an AMD GPU (its
  interval widens x2 there); on the one cross-vendor pair of the shared data
  (PyTorch on H100 -> MI300X, 150 kernels paired) it was 33.8 % off (WMAPE;
  2.1 % on the total) where wave scaling was 38.1 % off (31.2 % on the total,
  in the wrong direction), so AMD Instinct GPUs take it too.

All are ratios on the time the trace measured (the source run as
calibration): the learned model and wave scaling by construction; the roofline's eq. 9 scales
Nsight Compute's own time of the kernel (replayed at locked clocks, not the
run's), so its ops get ``T_trace x roofline(A -> B) / roofline(A -> A)``,
the interval's ends alike. ``--from X --to X`` gives every kernel its
measured time back. (``--models roofline`` alone is the paper's eq. 9 on
Nsight Compute's time, as ``nodecast kernels`` prints it.)

The result's notes say how many ops each model projected and the two models'
own notes; its interval is the roofline's eq.-9 interval for the first ops and
the learned model's (held-out error quantiles) or the wave model's (gamma in
[0, 1]) for the others. The choice is per op, so the
same trace projected with metrics for a subset mixes both.

``nodecast.models.registry.default_model("kernel")`` returns this model: the
whole-application forecast asks the registry for it rather than naming a
model, and the choice is made there (``DEFAULT_MODELS``), in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult
from nodecast.models.kernel_footprint import kernel_rows
from nodecast.models.kernel_learned import LearnedKernelModel
from nodecast.models.kernel_wave import WaveScalingModel
from nodecast.models.roofline import RooflineModel
from nodecast.notes import retold
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.models.sass import SassComparison
    from nodecast.traces.ncu import KernelMetrics
    from nodecast.traces.trace import Trace


#: The oldest NVIDIA compute capability (major) the learned kernel model was shown to beat wave scaling on,
#: leave-one-GPU-out: Pascal (6.x) to Blackwell (NeuSight's and AIConfigurator's GPUs; benchmarks/
#: bench_kernel_learned.py --wave). On the kernel zoo's Kepler and Maxwell GPUs wave scaling did better.
LEARNED_FROM_MAJOR = 6


def _nvidia_major(machine: Machine) -> int | None:
    """The compute capability major of an NVIDIA machine's GPU (``sm_90`` -> 9), None for others or unknown."""
    sheet = machine.gpu.sheet
    target = sheet.target if sheet is not None else ""
    if sheet is None or sheet.vendor != "nvidia" or not target.startswith("sm_") or not target[3:].isdigit():
        return None
    return int(target[3:-1])


def _modern(machine: Machine) -> bool:
    """Whether a machine's GPU is NVIDIA Pascal or newer, or an AMD Instinct (CDNA) GPU with a data sheet."""
    sheet = machine.gpu.sheet
    if sheet is not None and sheet.vendor == "amd":
        return True
    major = _nvidia_major(machine)
    return major is not None and major >= LEARNED_FROM_MAJOR


def metrics_free_model(source: Machine, target: Machine) -> tuple[str, str]:
    """The model of the kernels without metrics, and why: ``learned-kernel`` when both GPUs are NVIDIA GPUs of
    compute capability ``LEARNED_FROM_MAJOR`` or newer (where, on GPUs left out of its fit, it beat wave scaling
    in every op family) or AMD Instinct GPUs (the one cross-vendor pair, H100 -> MI300X, where it did too), else
    ``wave-scaling`` (Kepler, Maxwell, machine files without a data sheet)."""
    if _modern(source) and _modern(target):
        return LearnedKernelModel.name, ("both GPUs are NVIDIA Pascal or newer or AMD Instinct, where the learned "
                                         "model did better")
    return WaveScalingModel.name, ("a GPU older than Pascal or without a data sheet: wave scaling, which did "
                                   "better there")


class DefaultKernelModel:
    """Per kernel op: ``roofline`` when it has a metrics row, else ``learned-kernel`` or ``wave-scaling``
    (``metrics_free_model``; module docstring)."""

    name: ClassVar[str] = "default-kernel"
    kind: ClassVar[str] = "kernel"
    baseline: ClassVar[bool] = False
    description: ClassVar[str] = ("per kernel: roofline where Nsight Compute metrics exist, else learned-kernel "
                                  "between NVIDIA GPUs since Pascal and AMD Instinct GPUs, wave-scaling elsewhere "
                                  "(the default kernel model)")

    def __init__(self, metrics: KernelMetrics | None = None, sass: SassComparison | None = None) -> None:
        self.metrics = metrics
        self.sass = sass

    def accepts(self, trace: Trace) -> np.ndarray:
        """Every kernel op."""
        return WaveScalingModel().accepts(trace)

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Roofline times for the ops with metrics; learned-kernel or wave-scaling times for the other kernels
        (``metrics_free_model``); NaN elsewhere."""
        free_name, why = metrics_free_model(source, target)
        free = (LearnedKernelModel() if free_name == LearnedKernelModel.name else WaveScalingModel()).project(
            trace, source, target)
        # The metrics-free model's arrays are this result's own (nothing else holds them): filled in place.
        time_s = free.time_s
        low = free.low_s if free.low_s is not None else np.full(len(trace), np.nan)
        high = free.high_s if free.high_s is not None else np.full(len(trace), np.nan)
        n_kernels = len(kernel_rows(trace))
        notes: list[str] = []
        roof_rows = np.zeros(0, dtype=np.int64)
        roof_notes: list[str] = []
        if self.metrics is not None:
            roof = RooflineModel(self.metrics, self.sass)
            try:
                result = roof.project(trace, source, target)
            except InputError as exc:  # the machines lack a figure the roofline needs (a compute peak...)
                notes.append(f"roofline not used, its ops by {free_name}: {exc.message}")
            else:
                roof_rows = np.flatnonzero(result.handled)
                mid, lo, hi, calibration = self._on_measured(trace, source, target, result, roof_rows)
                time_s[roof_rows], low[roof_rows], high[roof_rows] = mid, lo, hi
                roof_notes = [*result.notes, *calibration]
        n_free = n_kernels - int(np.count_nonzero(np.isnan(time_s[kernel_rows(trace)]))) - len(roof_rows)
        notes.insert(0, f"{len(roof_rows):,} of {n_kernels:,} kernel ops by roofline (they have Nsight Compute "
                        f"metrics), {n_free:,} by {free_name}" + ("" if self.metrics is not None else
                                                                  " (no metrics given)") + f": {why}")
        notes += [retold(n, f"roofline: {n}") for n in roof_notes]
        if len(roof_rows) < n_kernels:
            notes += [retold(n, f"{free_name}: {n}") for n in free.notes]
        return ModelResult(self.name, time_s, low, high, notes)

    def _on_measured(self, trace: Trace, source: Machine, target: Machine, on_b: ModelResult,
                     rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The roofline's times of ``rows`` as ratios on the trace's measured times: ``T_trace x roofline(A -> B) /
        roofline(A -> A)``, the interval's ends alike; exactly ``T_trace`` (no interval) when B is A.

        Eq. 9 scales Nsight Compute's own time of each kernel, which is not the run's: ncu replays every kernel,
        at clocks locked to base by default, with cold caches. The roofline's projection onto A itself holds
        the same (ncu's time, or the capped ceiling where a kernel beat it, or the bracket of an unknown cache
        level), so its ratio to the projection onto B carries what the roofline says changes and nothing else.
        Launches whose measured time or projection onto A is not a number > 0 keep the roofline's own time.
        """
        measured = trace.duration_ns[rows].astype(np.float64) * 1e-9
        if target == source:
            return measured, measured.copy(), measured.copy(), [
                "B is A: every kernel with metrics keeps its measured time (the roofline's ratio B/A is 1)"]
        on_a = RooflineModel(self.metrics).project(trace, source, source).time_s[rows]  # no SASS change on A
        t, lo, hi = on_b.time_s[rows], on_b.low_s[rows], on_b.high_s[rows]  # type: ignore[index]
        ok = np.isfinite(on_a) & (on_a > 0) & np.isfinite(measured) & (measured > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(ok, measured / on_a, 1.0)
        notes = []
        if ok.any():
            notes.append("time measured in the trace x roofline(B) / roofline(A), per kernel: the run as calibration "
                         "(eq. 9 alone scales Nsight Compute's own time, taken replaying each kernel at locked clocks)")
        if not ok.all():
            notes.append(f"{plural(int((~ok).sum()), 'launch', 'launches')} without a measured time > 0 or a "
                         "projection onto A > 0: eq. 9 on Nsight Compute's time kept")
        return t * scale, lo * scale, hi * scale, notes
