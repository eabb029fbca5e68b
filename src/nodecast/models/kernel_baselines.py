"""Reference models a kernel projection must beat: bandwidth ratio, compute ratio, plain roofline.

Each scales the kernel's source time ``T_s`` by one ratio of the two GPUs'
figures, taken as the roofline model takes them (``roofline.gpu_figures``:
measured maxima, else data sheet x the source's measured/peak ratio, else
data sheet), so that a difference between these and ``roofline`` comes from
the modelling, not from the inputs:

* ``dram-ratio``: ``T_t = T_s * BW_DRAM,s / BW_DRAM,t`` (every kernel memory-bound);
* ``flops-ratio``, the compute ratio: ``T_t = T_s * P_s / P_t`` (every kernel
  compute-bound) with P the FMA peak of the kernel's dominant precision by
  FLOP (FP32 when the kernel has none) where Nsight Compute metrics exist, the
  tensor peak of its precision when it ran tensor-pipe instructions
  (``sm__inst_executed_pipe_tensor`` > 0: the precision its name says, else
  FP16, the only tensor type before Ampere); without metrics, the peak of the
  precision its name says (``kernel_precision``), else ``SMs x clock``;
* ``plain-roofline``: eq. 1 with the GPU maxima and DRAM only, no ceilings:
  ``T_t = T_s * roofline_t(OI) / roofline_s(OI)`` inverted, i.e.
  ``T_s * max(N_DRAM / BW_t, sum_p FLOP_p / P_t,p) / max(N_DRAM / BW_s, sum_p FLOP_p / P_s,p)``
  (``roofline_bound.bound_time_s``, the bound the simulator's roofline models use too).

Where Nsight Compute metrics are given (to the constructor; ``nodecast
kernels`` and ``--metrics`` do it), the source time of a launch with a metrics
row is ncu's duration, as for ``roofline``. ``dram-ratio`` and ``flops-ratio``
also project every other kernel of the trace from its own duration, so that
``nodecast project`` and ``evaluate`` compare them with ``wave-scaling`` on any
trace; ``plain-roofline`` needs metrics and projects nothing without them. A
machine file without DRAM bandwidth leaves ``dram-ratio`` idle with a note
rather than failing a transfer-only projection.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult
from nodecast.models.kernel_precision import Precisions, tensor_precision
from nodecast.models.kernel_ratios import compute_ratio, dram_ratio
from nodecast.models.roofline_bound import bound_time_s
from nodecast.models.roofline_figures import MODEL_PRECISIONS, GpuFigures, gpu_figures
from nodecast.words import plural
from nodecast.traces.kinds import OpKind
from nodecast.traces.ncu import KernelMetrics, join_trace

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace


def _flop_by_precision(metrics: KernelMetrics, rows: np.ndarray) -> dict[str, np.ndarray]:
    t = metrics.table
    out = {}
    for p in MODEL_PRECISIONS:
        cols = [f"{p}_fma_inst", f"{p}_add_inst", f"{p}_mul_inst"]
        vals = [np.nan_to_num(t[c].to_numpy(dtype=np.float64)[rows]) for c in cols]
        out[p] = 2.0 * vals[0] + vals[1] + vals[2]
    return out


class _KernelBaseline(ABC):
    """Shared plumbing: the ops with metrics, their ncu durations, the GPU figures; ``_scale`` does the rest.

    Subclasses that can do without metrics (``metrics_free``) project the
    other kernels with ``_scale_free`` from their trace durations.
    """

    kind: ClassVar[str] = "kernel"
    baseline: ClassVar[bool] = True
    metrics_free: ClassVar[bool] = False
    name: ClassVar[str]
    description: ClassVar[str]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # A metrics-free model without its own _scale_free would fail only when a trace without metrics reaches it.
        if cls.metrics_free and cls._scale_free is _KernelBaseline._scale_free:
            msg = f"{cls.__name__} sets metrics_free but does not define _scale_free"
            raise TypeError(msg)

    def __init__(self, metrics: KernelMetrics | None = None) -> None:
        self.metrics = metrics

    def _rows(self, trace: Trace) -> tuple[np.ndarray, np.ndarray]:
        """Trace rows projected (kernel ops with a metrics row) and their metrics rows."""
        if self.metrics is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        join = join_trace(self.metrics, trace)
        rows = np.flatnonzero(join >= 0)
        return rows, join[rows]

    def accepts(self, trace: Trace) -> np.ndarray:
        """Kernel ops that have a metrics row (every kernel op for a metrics-free baseline)."""
        if self.metrics_free:
            return trace["kind"] == OpKind.KERNEL
        out = np.zeros(len(trace), dtype=bool)
        out[self._rows(trace)[0]] = True
        return out

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Projected times of the accepted kernel ops; NaN elsewhere."""
        rows, mrows = self._rows(trace)
        out = np.full(len(trace), np.nan)
        if self.metrics is None and not self.metrics_free:
            return ModelResult(self.name, out, None, None, ["no Nsight Compute metrics given: no kernel projected"])
        notes: list[str] = []
        if rows.size:
            src, tgt = gpu_figures(source), gpu_figures(target, reference=source)
            t_s = self.metrics.table["duration_s"].to_numpy(dtype=np.float64)[mrows]  # type: ignore[union-attr]
            out[rows] = self._scale(t_s, mrows, src, tgt, notes, (source, target))
        if self.metrics_free:
            free = trace["kind"] == OpKind.KERNEL
            free[rows] = False
            free_rows = np.flatnonzero(free)
            if free_rows.size:
                t_s = trace.duration_ns[free_rows].astype(np.float64) * 1e-9
                try:
                    out[free_rows] = self._scale_free(trace, free_rows, t_s, source, target, notes)
                except InputError as exc:  # a machine file without the figure: idle, said, not a failed projection
                    notes.append(f"{len(free_rows):,} kernels without metrics not projected: {exc.reason}")
                else:
                    if rows.size:
                        notes.insert(0, f"{len(rows):,} launches with Nsight Compute metrics (ncu durations), "
                                        f"{len(free_rows):,} without (trace durations)")
        return ModelResult(self.name, out, None, None, notes)

    def _scale_free(self, trace: Trace, rows: np.ndarray, t_s: np.ndarray, source: Machine, target: Machine,
                    notes: list[str]) -> np.ndarray:
        """Projected times of the kernel rows ``rows`` that have no metrics, from their trace durations ``t_s``.

        Only called when ``metrics_free`` is set, and every such subclass defines it (``__init_subclass__``
        checks), so the base never runs.
        """
        msg = f"{type(self).__name__} projects no kernel without metrics"
        raise NotImplementedError(msg)

    @abstractmethod
    def _scale(self, t_s: np.ndarray, mrows: np.ndarray, src: GpuFigures, tgt: GpuFigures,
               notes: list[str], machines: tuple[Machine, Machine]) -> np.ndarray:
        """Projected times of the launches ``mrows`` measured at ``t_s`` seconds on the source."""


class DramRatioModel(_KernelBaseline):
    """Every kernel DRAM-bound: source time x source/target DRAM bandwidth."""

    name: ClassVar[str] = "dram-ratio"
    description: ClassVar[str] = "kernel time x DRAM bandwidth ratio (source/target); no metrics needed"
    metrics_free: ClassVar[bool] = True

    def _scale_free(self, trace: Trace, rows: np.ndarray, t_s: np.ndarray, source: Machine, target: Machine,
                    notes: list[str]) -> np.ndarray:
        ratio, note = dram_ratio(source, target, self.name)
        if note not in notes:
            notes.append(note)
        return t_s * ratio

    def _scale(self, t_s: np.ndarray, mrows: np.ndarray, src: GpuFigures, tgt: GpuFigures,
               notes: list[str], machines: tuple[Machine, Machine]) -> np.ndarray:
        bs, bt = src.bw("dram", self.name), tgt.bw("dram", self.name)
        notes.append(f"DRAM {bs / 1e9:,.0f} GB/s ({src.origin['bw.dram']}) -> {bt / 1e9:,.0f} GB/s "
                     f"({tgt.origin['bw.dram']}): x{bs / bt:.3f}")
        return t_s * (bs / bt)


class FlopsRatioModel(_KernelBaseline):
    """Every kernel compute-bound: source time x source/target FMA peak of its dominant precision."""

    name: ClassVar[str] = "flops-ratio"
    description: ClassVar[str] = ("kernel time x compute ratio (source/target): peak of its precision (ncu FLOP "
                                  "counts or tensor pipe, else its name), else SMs x clock; no metrics needed")
    metrics_free: ClassVar[bool] = True

    def _scale_free(self, trace: Trace, rows: np.ndarray, t_s: np.ndarray, source: Machine, target: Machine,
                    notes: list[str]) -> np.ndarray:
        ratio, more = compute_ratio(source, target, Precisions(trace.names, trace["name_id"][rows]))
        notes.extend(more)
        return t_s * ratio

    def _scale(self, t_s: np.ndarray, mrows: np.ndarray, src: GpuFigures, tgt: GpuFigures,
               notes: list[str], machines: tuple[Machine, Machine]) -> np.ndarray:
        scaled = self._fma_scale(t_s, mrows, src, tgt, notes)
        return self._tensor_rescale(t_s, mrows, scaled, notes, machines)

    def _tensor_rescale(self, t_s: np.ndarray, mrows: np.ndarray, scaled: np.ndarray, notes: list[str],
                        machines: tuple[Machine, Machine]) -> np.ndarray:
        """Launches that ran tensor-pipe instructions: T_s x the tensor peak ratio of their precision."""
        table = self.metrics.table  # type: ignore[union-attr]
        if "tensor_inst" not in table:
            return scaled
        tensor = np.nan_to_num(table["tensor_inst"].to_numpy(dtype=np.float64)[mrows]) > 0
        if not tensor.any():
            return scaled
        source, target = machines
        names = table["kernel"].to_numpy()[mrows]
        keys = np.array([tensor_precision(n) for n in names], dtype=object)
        out = scaled.copy()
        for key in sorted(set(keys[tensor].tolist())):
            sel = tensor & (keys == key)
            ps, pt = source.gpu.peak_flops_per_s(key), target.gpu.peak_flops_per_s(key)
            if not ps or not pt:
                notes.append(f"{int(sel.sum())} launches ran tensor-pipe instructions ({key.upper()}), but "
                             f"{source.name if not ps else target.name} gives no {key} peak: scaled by their "
                             "vector precision")
                continue
            out[sel] = t_s[sel] * ps / pt
            notes.append(f"{int(sel.sum())} launches ran tensor-pipe instructions: at the {key.upper()} peaks, "
                         f"x{ps / pt:.3f}")
        return out

    def _fma_scale(self, t_s: np.ndarray, mrows: np.ndarray, src: GpuFigures, tgt: GpuFigures,
                   notes: list[str]) -> np.ndarray:
        flop = _flop_by_precision(self.metrics, mrows)  # type: ignore[arg-type]
        stack = np.vstack([flop[p] for p in MODEL_PRECISIONS])
        no_flop = stack.max(axis=0) <= 0
        dom = np.where(~no_flop, np.argmax(stack, axis=0), MODEL_PRECISIONS.index("fp32"))
        ratio = np.empty(len(t_s))
        n = len(t_s)
        # One note per precision, counting launches out of all of them; those without FLOP are said apart,
        # inside the FP32 count they belong to.
        for i, p in enumerate(MODEL_PRECISIONS):
            sel = dom == i
            if sel.any():
                r = src.peak(p, "fma", self.name) / tgt.peak(p, "fma", self.name)
                ratio[sel] = r
                k, bare = int(sel.sum()), int((sel & no_flop).sum())
                why = f" ({bare} of them without FLOP, scaled by FP32 by default)" if bare else ""
                notes.append(f"{k} of {plural(n, 'launch', 'launches')} at the {p.upper()} FMA peaks{why}: "
                             f"x{r:.3f} ({src.origin[f'fma.{p}']} -> {tgt.origin[f'fma.{p}']})")
        return t_s * ratio


class PlainRooflineModel(_KernelBaseline):
    """Eq. 1 on each GPU with its maxima, DRAM level only, no kernel-specific ceilings."""

    name: ClassVar[str] = "plain-roofline"
    description: ClassVar[str] = "kernel time x ratio of min(BW_DRAM x OI, peak) on each GPU (no ceilings)"

    def _scale(self, t_s: np.ndarray, mrows: np.ndarray, src: GpuFigures, tgt: GpuFigures,
               notes: list[str], machines: tuple[Machine, Machine]) -> np.ndarray:
        flop = _flop_by_precision(self.metrics, mrows)  # type: ignore[arg-type]
        dram = np.nan_to_num(self.metrics.table["dram_bytes"].to_numpy(dtype=np.float64)[mrows])
        r_s, r_t = bound_time_s(dram, flop, src, self.name), bound_time_s(dram, flop, tgt, self.name)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(r_s > 0, t_s * r_t / r_s, t_s)
        notes.append("FMA peaks and DRAM bandwidth of each GPU (eq. 1, no ceilings)")
        return out
