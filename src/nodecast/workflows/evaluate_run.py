"""The whole run, actual against forecast: what ``nodecast evaluate`` adds to its per-op errors.

``compare_runs(trace_a, api_a, trace_b, api_b, source, target)`` forecasts
run A on node B (``nodecast.workflows.forecast``, with the registry's model
chain, as ``nodecast forecast`` does) and measures run B the same way
(its own OpGraph and recorded timeline), then compares, in seconds:

* end-to-end time: first API call (first GPU op start for a run without
  host API records) to the end of the last GPU op (both runs by the same
  definition, ``metrics.end_to_end_s``; ``WholeRun.end_to_end_start`` says
  which);
* GPU-busy time, the union of GPU op intervals, summed over the GPUs;
* GPU time per category, the sum of op durations: kernels, memsets, copies
  in all, and copies per transfer class. The kernel row gives the kernel
  time on A and on B even where no model projected kernels: the forecast
  then keeps A's time, and the row says so.

Errors are (forecast - actual) / actual. Runs are compared as wholes: no
alignment of ops is needed (that is ``nodecast.workflows.evaluate``'s per-op part).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.engine import metrics
from nodecast.cost.ops import SOURCE, CostOptions
from nodecast.workflows.forecast import ForecastResult, forecast, read_api_for
from nodecast.graph.opgraph import OpGraph, OpKind
from nodecast.engine.replay import Schedule

if TYPE_CHECKING:
    from nodecast.traces.api import ApiCalls
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace


@dataclass
class WholeRun:
    """Run A forecast on B against run B as measured (see the module docstring)."""

    forecast: ForecastResult
    graph_b: OpGraph
    measured_b: Schedule
    notes: list[str] = field(default_factory=list)

    @property
    def actual_end_to_end_s(self) -> float:
        """Run B's end-to-end time, measured."""
        return metrics.end_to_end_s(self.graph_b, self.measured_b)

    def end_to_end_start(self) -> str:
        """Where end to end starts (``metrics.end_to_end_start``): one phrase when both runs agree, else
        ``first API call on A or first GPU op start on B``."""
        a, b = metrics.end_to_end_start(self.forecast.graph), metrics.end_to_end_start(self.graph_b)
        return a if a == b else f"{a} on A or {b} on B"

    def table(self) -> pd.DataFrame:
        """Rows: end to end, GPU busy, kernels, memsets, copies (all and per class); columns: on A, actual on B,
        forecast on B, error (fraction), how the forecast was made."""
        f = self.forecast
        rows = [_row(f"end to end ({self.end_to_end_start()} to last GPU op end)", f.measured_end_to_end_s,
                     self.actual_end_to_end_s, f.end_to_end_s, "replayed graph"),
                _row("GPU busy (union of op intervals, all GPUs)", sum(f.busy_s()["measured on A"].values()),
                     sum(metrics.gpu_busy_s(self.graph_b, self.measured_b).values()),
                     sum(f.busy_s()["forecast on B"].values()), "replayed graph")]
        a_cat = _category_times(f.graph, f.graph.ops["source_dur_s"])
        f_cat = _category_times(f.graph, f.costs.duration_s)
        b_dur = self.measured_b.end_s - self.measured_b.start_s
        b_cat = _category_times(self.graph_b, b_dur)
        models = _category_models(f)
        order = ["kernels", "memsets", "copies (all kinds)"]
        order += sorted(c for c in set(a_cat) | set(b_cat) if c.startswith("copies: "))
        for cat in order:
            if cat not in a_cat and cat not in b_cat:
                continue
            rows.append(_row(f"GPU time, {cat}", a_cat.get(cat, 0.0), b_cat.get(cat, 0.0),
                             f_cat.get(cat, 0.0), models.get(cat, "none on A")))
        return pd.DataFrame(rows)


def _row(quantity: str, on_a: float, actual: float, fc: float, how: str) -> dict[str, object]:
    return {"quantity": quantity, "on A": on_a, "actual on B": actual, "forecast on B": fc,
            "error": (fc - actual) / actual if actual else float("nan"), "forecast from": how}


def _category_times(graph: OpGraph, durations: np.ndarray) -> dict[str, float]:
    """Sum of GPU op durations per category label, plus "copies (all kinds)"."""
    code, labels = metrics.op_category(graph)
    gpu = graph.gpu_mask()
    sums = np.bincount(code[gpu], weights=durations[gpu], minlength=len(labels))
    counts = np.bincount(code[gpu], minlength=len(labels))
    out = {labels[i]: float(sums[i]) for i in np.flatnonzero(counts)}
    copies = graph.ops["kind"] == OpKind.COPY
    if copies.any():
        out["copies (all kinds)"] = float(durations[copies].sum())
    return out


def _category_models(f: ForecastResult) -> dict[str, str]:
    """Per category: the models that gave the forecast ("kept at A's time" for ops no model handled)."""
    code, labels = metrics.op_category(f.graph)
    gpu = f.graph.gpu_mask()
    model = f.costs.model_of()
    out: dict[str, str] = {}

    def describe(sel: np.ndarray) -> str:
        names, counts = np.unique(model[sel], return_counts=True)
        return ", ".join(("kept at A's time" if n == SOURCE else str(n)) + (f" x{c:,}" if len(names) > 1 else "")
                         for n, c in zip(names, counts, strict=True))

    for i in np.unique(code[gpu]):
        out[labels[i]] = describe(gpu & (code == i))
    copies = f.graph.ops["kind"] == OpKind.COPY
    if copies.any():
        out["copies (all kinds)"] = describe(copies)
    return out


def compare_runs(trace_a: Trace, api_a: ApiCalls, trace_b: Trace, api_b: ApiCalls, source: Machine,
                 target: Machine, options: CostOptions | None = None) -> WholeRun:
    """Forecast run A on ``target`` and compare it with run B as a whole (module docstring)."""
    from nodecast.graph.build import build
    from nodecast.workflows.replay import measured_schedule

    fc = forecast(trace_a, api_a, source, target, options)
    graph_b = build(trace_b, api_b)
    notes = []
    if not len(api_a) or not len(api_b):
        both = not len(api_a) and not len(api_b)
        which = "runs A and B have" if both else f"run {'A' if not len(api_a) else 'B'} has"
        its = "their" if both else "its"
        notes.append(f"{which} no host API records: {its} end to end runs from {its} first GPU op start "
                     "(the recorded-offset fallback)")
    return WholeRun(fc, graph_b, measured_schedule(graph_b, trace_b, api_b), notes)


def compare_run_files(path_a: str | os.PathLike[str], path_b: str | os.PathLike[str], source: Machine,
                      target: Machine, options: CostOptions | None = None, *, trace_a: Trace | None = None,
                      trace_b: Trace | None = None) -> WholeRun:
    """``compare_runs`` for two trace files (or ``sample:NAME``); traces already loaded may be given."""
    from nodecast.traces.load import load_trace

    trace_a = load_trace(path_a) if trace_a is None else trace_a
    trace_b = load_trace(path_b) if trace_b is None else trace_b
    return compare_runs(trace_a, read_api_for(path_a), trace_b, read_api_for(path_b), source, target, options)


def compare_or_reason(path_a: str | os.PathLike[str], path_b: str | os.PathLike[str], source: Machine,
                      target: Machine, options: CostOptions | None = None, *, trace_a: Trace | None = None,
                      trace_b: Trace | None = None) -> tuple[WholeRun | None, str]:
    """``compare_run_files``, or (None, why) when a run's operation graph cannot be built (the per-op
    evaluation does not need it, so ``nodecast evaluate`` says why and goes on)."""
    try:
        return compare_run_files(path_a, path_b, source, target, options, trace_a=trace_a, trace_b=trace_b), ""
    except InputError as exc:
        return None, exc.message
