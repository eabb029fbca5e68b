"""The default kernel model: the roofline where Nsight Compute metrics exist, wave scaling everywhere else, per op.

A user's trace may come with metrics for some kernels (``ncu`` run with a
``--kernel-name`` filter or ``--launch-count``), for all of them, or for none.
``default-kernel`` projects each kernel op with the best model that can:

* ``roofline`` (``nodecast.models.roofline``: hierarchical roofline with
  kernel-specific ceilings, Van Lanker et al.) for the ops joined to a metrics
  row (by kernel name and launch order, ``nodecast.traces.ncu.join_trace``),
  when both machines give the figures it needs (L1/L2 bandwidths: a machine
  file with ``[measured.gpu]`` or levels; a node composed from a data sheet
  has DRAM only) -- else a note says why and these ops go to wave scaling too;
* ``wave-scaling`` (``nodecast.models.kernel_wave``: Habitat's wave scaling with
  gamma from the trace) for every other kernel op.

The result's notes say how many ops each model projected and the two models'
own notes; its interval is the roofline's eq.-9 interval for the first ops and
the wave model's gamma in [0, 1] for the others. The choice is per op, so the
same trace projected with metrics for a subset mixes both.

``nodecast.models.base.default_model("kernel")`` returns this model: the
whole-application forecast asks the registry for it rather than naming a
model, and the choice is made there (``DEFAULT_MODELS``), in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult, register
from nodecast.models.kernel_footprint import kernel_rows
from nodecast.models.kernel_wave import WaveScalingModel
from nodecast.models.roofline import RooflineModel
from nodecast.notes import retold

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.models.sass import SassComparison
    from nodecast.traces.ncu import KernelMetrics
    from nodecast.traces.trace import Trace


@register
class DefaultKernelModel:
    """Per kernel op: ``roofline`` when it has a metrics row, else ``wave-scaling`` (module docstring)."""

    name: ClassVar[str] = "default-kernel"
    kind: ClassVar[str] = "kernel"
    baseline: ClassVar[bool] = False
    description: ClassVar[str] = ("per kernel: roofline where Nsight Compute metrics exist, wave-scaling "
                                  "elsewhere (the default kernel model)")

    def __init__(self, metrics: KernelMetrics | None = None, sass: SassComparison | None = None) -> None:
        self.metrics = metrics
        self.sass = sass

    def accepts(self, trace: Trace) -> np.ndarray:
        """Every kernel op."""
        return WaveScalingModel().accepts(trace)

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Roofline times for the ops with metrics, wave-scaling times for the other kernels; NaN elsewhere."""
        wave = WaveScalingModel().project(trace, source, target)
        # The wave model's arrays are this result's own (nothing else holds them): filled in place, not copied.
        time_s = wave.time_s
        low = wave.low_s if wave.low_s is not None else np.full(len(trace), np.nan)
        high = wave.high_s if wave.high_s is not None else np.full(len(trace), np.nan)
        n_kernels = len(kernel_rows(trace))
        notes: list[str] = []
        roof_rows = np.zeros(0, dtype=np.int64)
        roof_notes: list[str] = []
        if self.metrics is not None:
            roof = RooflineModel(self.metrics, self.sass)
            try:
                result = roof.project(trace, source, target)
            except InputError as exc:  # the machines lack a figure the roofline needs (a compute peak...)
                notes.append(f"roofline not used, its ops by wave-scaling: {exc.message}")
            else:
                roof_rows = np.flatnonzero(result.handled)
                time_s[roof_rows] = result.time_s[roof_rows]
                low[roof_rows] = result.low_s[roof_rows]  # type: ignore[index]
                high[roof_rows] = result.high_s[roof_rows]  # type: ignore[index]
                roof_notes = result.notes
        n_wave = n_kernels - int(np.count_nonzero(np.isnan(time_s[kernel_rows(trace)]))) - len(roof_rows)
        notes.insert(0, f"{len(roof_rows):,} of {n_kernels:,} kernel ops by roofline (they have Nsight Compute "
                        f"metrics), {n_wave:,} by wave-scaling" + ("" if self.metrics is not None else
                                                                   " (no metrics given)"))
        notes += [retold(n, f"roofline: {n}") for n in roof_notes]
        if len(roof_rows) < n_kernels:
            notes += [retold(n, f"wave-scaling: {n}") for n in wave.notes]
        return ModelResult(self.name, time_s, low, high, notes)
