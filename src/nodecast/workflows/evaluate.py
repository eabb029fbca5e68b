"""How far off a projection was: align two runs, then AHEAD's WMAPE.

``evaluate`` projects run A (recorded on node A) onto node B, pairs its ops
with those of run B, recorded on B (``workflows.align``: by stream, kind and
order, byte counts agreeing; kernels by name, or by op class, dtype and
shape), and measures the error of every model on the pairs.

When no op can be evaluated (none both projected by a model and paired with
an op of B that took time), the runs are compared by their kernel totals
(every kernel of A projected against every kernel of B: ``kernel_table``)
when some model projected every kernel of A and B's kernels took time; the evaluation says it ``compared the
totals only`` (``Evaluation.totals_only``). Otherwise ``evaluate`` raises
``NothingToEvaluate`` saying what each trace holds, what aligned and which
models projected nothing.

WMAPE (AHEAD section VI.C): for transfer i with actual GPU time A_i on B and
projected time P_i, the weighted error is 100 * W_i * |A_i - P_i| / A_i with
W_i = A_i / sum(A). The paper says WMAPE is "calculated as the average over
all transactions"; read literally (a mean of the weighted terms) it would
shrink as 1/n and could not give the paper's 19-23 % for traces of thousands
of ops, so nodecast reports the sum of the weighted terms, which is the
standard WMAPE = 100 * sum|A - P| / sum(A).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.machines.schema import Machine
from nodecast.notes import HOST_TIME, LATENCY_KEPT, OPS_KEPT, Note, about, from_, records, retold
from nodecast.cost.project import Projection, op_category, project, weigh_notes
from nodecast.headline import Number
from nodecast.words import plural
from nodecast.traces.kinds import OpKind
from nodecast.traces.trace import Trace
from nodecast.workflows.align import Alignment, align

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

    from nodecast.cost.ops import CostOptions
    from nodecast.workflows.evaluate_run import WholeRun
    from nodecast.traces.ncu import KernelMetrics


class NothingToEvaluate(InputError):
    """No op of run A was both projected by a model and paired with an op of run B that took time."""


def wmape(actual_s: np.ndarray, projected_s: np.ndarray) -> float:
    """AHEAD's WMAPE in percent: 100 * sum|A - P| / sum(A) (see the module docstring)."""
    total = actual_s.sum()
    if len(actual_s) == 0 or total <= 0:
        return float("nan")
    return float(100.0 * np.abs(actual_s - projected_s).sum() / total)


def weighted_errors(actual_s: np.ndarray, projected_s: np.ndarray) -> np.ndarray:
    """Per-op weighted absolute percentage errors 100 * W_i * |A_i - P_i| / A_i (they sum to WMAPE)."""
    return 100.0 * np.abs(actual_s - projected_s) / actual_s.sum()


def mape(actual_s: np.ndarray, projected_s: np.ndarray) -> float:
    """Mean absolute percentage error, 100 * mean(|A - P| / A): the roofline paper's metric."""
    if len(actual_s) == 0:
        return float("nan")
    return float(np.mean(ape(actual_s, projected_s)))


def ape(actual_s: np.ndarray, projected_s: np.ndarray) -> np.ndarray:
    """Per-op absolute percentage error 100 * |A - P| / A (for box plots)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * np.abs(actual_s - projected_s) / actual_s


#: Pseudo-model: the op keeps the GPU time it had on the source node.
UNCHANGED = "unchanged"
#: How an evaluation with no op pair says that it compared the kernel totals only (its note and table lines).
TOTALS_ONLY = "compared the totals only"
#: Op categories whose best WMAPE ``Evaluation.headline`` gives, those with the most time on B first.
HEADLINE_CATEGORIES = 4


@dataclass
class Evaluation:
    """Projection of trace A onto node B compared with a trace recorded on B."""

    projection: Projection
    trace_b: Trace
    alignment: Alignment
    actual_s: np.ndarray  # GPU time on B, per evaluated pair
    projected_s: dict[str, np.ndarray]  # per model (+ "unchanged"), per evaluated pair
    category: np.ndarray  # per evaluated pair
    mask: np.ndarray  # which aligned pairs are evaluated (projected by some model, nonzero time on B)
    notes: list[str] = field(default_factory=list)
    whole: WholeRun | None = None  # run A forecast on B against run B as wholes (``add_whole_run``)

    @property
    def totals_only(self) -> bool:
        """Whether no op pair was evaluated and only the kernel totals compare the runs (``kernels()``)."""
        return len(self.actual_s) == 0

    @property
    def source(self) -> Machine:
        """Node A, where run A was recorded."""
        return self.projection.source

    @property
    def target(self) -> Machine:
        """Node B, where run A is projected and run B was recorded."""
        return self.projection.target

    def all_notes(self) -> list[str]:
        """How the machines were picked, then the evaluation's notes (the models', the alignment's, the whole
        run's); those about an assumption weighed by the GPU time on A of the evaluated ops it covers
        (``project.weigh_notes``; the whole run's by its forecast's end to end)."""
        from nodecast.machines.compose import node_notes

        notes = [*node_notes(self.source, self.target), *self.notes]  # a host assumed for both: said once
        return weigh_notes(notes, self.projection, self.alignment.index_a[self.mask], "evaluated ops")

    def model_types(self) -> dict[str, str]:
        """Per row of ``table()``: model, baseline, scaled, scaled baseline, or reference (``unchanged``)."""
        baseline = {m.name for m in self.projection.models if m.baseline}
        scaled = {m.name for m in self.projection.models if getattr(m, "source_scaled", False)}
        return {m: "reference" if m == UNCHANGED else
                ("scaled baseline" if m in scaled else "baseline") if m in baseline else
                "scaled" if m in scaled else "model" for m in self.projected_s}

    def typed_table(self) -> pd.DataFrame:
        """``table()`` with a ``type`` column after the model (what ``nodecast evaluate`` prints and --table writes)."""
        table = self.table()
        types = self.model_types()
        table.insert(1, "type", [types[m] for m in table["model"]])
        return table

    def kernels(self) -> pd.DataFrame:
        """Kernel MAPE, WMAPE and totals per model (``kernel_table``)."""
        return kernel_table(self)

    def unmatched(self) -> pd.DataFrame:
        """Ops of A and of B left unpaired, per trace and category (count, bytes)."""
        return self.alignment.unmatched_summary(self.projection.trace, self.trace_b)

    def headline(self) -> list[Number]:
        """The whole run's end to end on B, actual and forecast, and the error (when it was compared); then, per
        op category (the ``HEADLINE_CATEGORIES`` with the most time on B), the lowest per-op WMAPE of a model, with
        that of keeping A's times (``unchanged``) in its note."""
        out = []
        if self.whole is not None:
            w = self.whole
            actual, fc = w.actual_end_to_end_s, w.forecast.end_to_end_s
            out += [Number(f"end to end on {self.target.name} (B), run B as measured", actual, "s"),
                    Number(f"end to end on {self.target.name} (B), run A forecast", fc, "s"),
                    Number("end-to-end error, (forecast - actual) / actual",
                           100 * ((fc - actual) / actual) if actual else float("nan"), "%")]
        if self.totals_only:
            out += self._totals_headline()
        table = self.table().set_index("model")
        cats = [c for c in table.columns if c not in ("all", "MAPE", "ops")]
        time = {c: float(self.actual_s[self.category == c].sum()) for c in cats}
        for cat in sorted(cats, key=lambda c: -time[c])[:HEADLINE_CATEGORIES]:
            models = table[cat].drop(index=UNCHANGED, errors="ignore").dropna()
            if not len(models):
                continue
            best = str(models.idxmin())
            ops = int(np.count_nonzero((self.category == cat) & ~np.isnan(self.projected_s[best])))
            ref = f"; keeping A's times: {table.loc[UNCHANGED, cat]:.1f} %" if UNCHANGED in table.index else ""
            out.append(Number(f"{cat}: lowest per-op WMAPE ({best})", float(models[best]), "%",
                              note=f"best of {plural(len(models), 'model')} over {plural(ops, 'op')}{ref}"))
        return out

    def _totals_headline(self) -> list[Number]:
        """With no op pair: the lowest error of a model's kernel total against B's (``kernels()``), with keeping
        A's times in its note."""
        kernels = self.kernels().set_index("model")["total_error"]
        models = kernels.drop(index=UNCHANGED, errors="ignore").dropna()
        if not len(models):
            return []
        best = str(models.idxmin())
        ref = f"; keeping A's times: {kernels[UNCHANGED]:.1f} %" if UNCHANGED in kernels.index else ""
        return [Number(f"kernel totals ({TOTALS_ONLY}): lowest error ({best})", float(models[best]), "%",
                       note=f"no op of A paired with one of B: every kernel of A projected against every kernel of "
                            f"B, best of {plural(len(models), 'model')}{ref}")]

    def summary(self) -> dict[str, Any]:
        """Every value of the evaluation as plain Python (JSON-ready; seconds, errors in %; the whole run's errors
        as fractions)."""
        al = self.alignment
        return {
            "trace_a": self.projection.trace.meta.source, "trace_b": self.trace_b.meta.source,
            "source": self.source.name, "target": self.target.name,
            "ops": {"a": len(self.projection.trace), "b": len(self.trace_b), "aligned_pairs": len(al.index_a),
                    "evaluated": len(self.actual_s), "unmatched_a": len(al.unmatched_a),
                    "unmatched_b": len(al.unmatched_b), "realigned_groups": al.realigned_groups,
                    "paired_by_shape": al.by_work},
            "totals_only": self.totals_only,
            "wmape": self.typed_table(), "kernels": self.kernels(), "unmatched": self.unmatched(),
            "whole_run": None if self.whole is None else self.whole.table(),
            "notes": records(self.all_notes()),
        }

    def table(self) -> pd.DataFrame:
        """WMAPE (%) per model (rows) and category (columns, plus "all"); MAPE (%) over all its ops."""
        cats = sorted(set(self.category.tolist()))
        rows = []
        for name, p in self.projected_s.items():
            ok = ~np.isnan(p)
            row = {"model": name, "all": wmape(self.actual_s[ok], p[ok]),
                   "MAPE": mape(self.actual_s[ok], p[ok]), "ops": int(ok.sum())}
            for c in cats:
                sel = ok & (self.category == c)
                row[c] = wmape(self.actual_s[sel], p[sel])
            rows.append(row)
        return pd.DataFrame(rows, columns=["model", "all", *cats, "MAPE", "ops"])

    def per_op(self) -> pd.DataFrame:
        """Matched pairs: indices, category, bytes, actual and projected seconds per model."""
        a = self.projection.trace
        df = pd.DataFrame({
            "op_a": self.alignment.index_a[self.mask],
            "op_b": self.alignment.index_b[self.mask],
            "category": self.category,
            "bytes": a["bytes"][self.alignment.index_a[self.mask]],
            "source_s": self.projection.source_s[self.alignment.index_a[self.mask]],
            "actual_s": self.actual_s,
        })
        for name, p in self.projected_s.items():
            if name != UNCHANGED:
                df[f"{name}_s"] = p
        return df


def evaluate(
    trace_a: Trace,
    trace_b: Trace,
    source: Machine,
    target: Machine,
    model_names: list[str] | None = None,
    kind: str | None = None,
    metrics: KernelMetrics | None = None,
    one_byte_s: Mapping[str, float] | None = None,
    host_memory: str | None = None,
) -> Evaluation:
    """Project ``trace_a`` from ``source`` onto ``target`` and compare with ``trace_b``.

    ``metrics``: Nsight Compute metrics of run A's kernels, for the kernel
    models; ``one_byte_s``: 1-byte costs in seconds per transfer class key (or
    ``"all"``), as ``project`` takes them; ``host_memory``: the kind of the
    host memory run A does not record, as ``project`` takes it. Raises
    ``NothingToEvaluate`` (an InputError) when no op can be evaluated.
    """
    projection = project(trace_a, source, target, model_names, kind, metrics, one_byte_s, host_memory)
    alignment = align(trace_a, trace_b)
    ia, ib = alignment.index_a, alignment.index_b
    actual = trace_b.duration_ns[ib].astype(np.float64) * 1e-9
    handled = projection.handled_by_any[ia]
    mask = handled & (actual > 0)
    notes = from_(projection.notes, "models") + from_(alignment.notes, "alignment")
    if not mask.any():
        if not kernel_totals_comparable(projection, trace_b):
            raise NothingToEvaluate(_why_nothing(trace_a, trace_b, projection, alignment, actual),
                                    hint=_what_to_do(projection))
        notes.append(Note(f"{TOTALS_ONLY}: no op of A paired with one of B that a model projected (not by kernel "
                          "name and launch order, nor by op, dtype and shape): every kernel of A projected against "
                          "every kernel of B", origin="alignment"))
    dropped_zero = int((handled & (actual <= 0)).sum())
    if dropped_zero:
        notes.append(f"{plural(dropped_zero, 'matched op')} with zero GPU time on B left out of the errors")
    projected = {name: r.time_s[ia][mask] for name, r in projection.results.items()}
    projected[UNCHANGED] = projection.source_s[ia][mask]
    return Evaluation(
        projection=projection,
        trace_b=trace_b,
        alignment=alignment,
        actual_s=actual[mask],
        projected_s=projected,
        category=op_category(trace_a)[ia][mask],
        mask=mask,
        notes=notes,
    )


#: Category label of kernels in ``Evaluation.category`` (``nodecast.cost.project.op_category``).
KERNEL = "kernel"


def kernel_table(ev: Evaluation) -> pd.DataFrame:
    """Per model: aligned kernel launches, their MAPE and WMAPE (%), and the kernel totals (seconds, error %).

    Columns ``model, launches, MAPE, WMAPE, projected_s, actual_s, total_error``;
    ``projected_s`` is NaN for a model that left some kernel of A unprojected
    (its total would cover less than B's). Empty when run A has no kernel.
    """
    trace_a, trace_b = ev.projection.trace, ev.trace_b
    k_a = trace_a["kind"] == OpKind.KERNEL
    if not k_a.any():
        return pd.DataFrame(columns=["model", "launches", "MAPE", "WMAPE", "projected_s", "actual_s", "total_error"])
    actual_total = float(trace_b.duration_ns[trace_b["kind"] == OpKind.KERNEL].sum()) * 1e-9
    aligned = ev.category == KERNEL
    rows = []
    for name, projected in ev.projected_s.items():
        ok = aligned & ~np.isnan(projected)
        a, p = ev.actual_s[ok], projected[ok]
        if name == UNCHANGED:
            per_op = ev.projection.source_s
        else:
            per_op = ev.projection.results[name].time_s
        if not np.isfinite(per_op[k_a]).any():
            continue  # a model that projects no kernel (a transfer model)
        total = float(per_op[k_a].sum()) if np.isfinite(per_op[k_a]).all() else float("nan")
        rows.append({
            "model": name,
            "launches": int(ok.sum()),
            "MAPE": float(np.mean(100.0 * np.abs(a - p) / a)) if len(a) else float("nan"),
            "WMAPE": float(100.0 * np.abs(a - p).sum() / a.sum()) if len(a) and a.sum() > 0 else float("nan"),
            "projected_s": total,
            "actual_s": actual_total,
            "total_error": 100.0 * abs(total - actual_total) / actual_total if actual_total > 0 else float("nan"),
        })
    return pd.DataFrame(rows, columns=["model", "launches", "MAPE", "WMAPE", "projected_s", "actual_s", "total_error"])


def add_whole_run(ev: Evaluation, path_a: str | os.PathLike[str], path_b: str | os.PathLike[str],
                  options: CostOptions | None = None) -> Evaluation:
    """``ev`` with the whole-run comparison of its two runs (``nodecast.workflows.evaluate_run``: run A forecast on B as
    ``nodecast forecast`` does, against run B measured), or, when a run's operation graph cannot be built, a note
    saying why; the whole run's notes join ``ev.notes``. ``path_a``/``path_b``: the trace files (their host
    records are read from them)."""
    from nodecast.workflows.evaluate_run import compare_or_reason

    whole, why = compare_or_reason(path_a, path_b, ev.source, ev.target, options, trace_a=ev.projection.trace,
                                   trace_b=ev.trace_b)
    ev.whole = whole
    if whole is None:
        ev.notes.append(Note(f"whole-run comparison not made: {why}", origin="whole run"))
        return ev
    # The forecast's notes on what it kept from A, weighed by its end to end: they explain the whole run's error.
    kept = [retold(n, f"whole run: {n}", "whole run") for n in whole.forecast.notes
            if about(n) in (HOST_TIME, LATENCY_KEPT, OPS_KEPT)]
    ev.notes.extend([*kept, *from_(whole.notes, "whole run")])
    return ev


def kernel_totals_comparable(projection: Projection, trace_b: Trace) -> bool:
    """Whether the kernel totals can be compared though no op pairs: some model projected every kernel of run A,
    and run B's kernels took time."""
    trace_a = projection.trace
    kernels_a = trace_a["kind"] == OpKind.KERNEL
    kernels_b = trace_b["kind"] == OpKind.KERNEL
    if not kernels_a.any() or trace_b.duration_ns[kernels_b].sum() <= 0:
        return False
    return any(np.isfinite(r.time_s[kernels_a]).all() for r in projection.results.values())


def _inventory(trace: Trace, rows: np.ndarray | None = None) -> str:
    """``"kernel x154, memset x2"``: ops per category (syncs left out), most first."""
    cats = op_category(trace)
    keep = trace["kind"] != OpKind.SYNC
    if rows is not None:
        cats, keep = cats[rows], keep[rows]
    counts = pd.Series(cats[keep]).value_counts()
    return ", ".join(f"{c} x{n:,}" for c, n in counts.items()) if len(counts) else "no GPU op"


def _idle_models(projection: Projection) -> dict[str, list[str]]:
    """Why -> models that projected no op of run A, in the order they ran."""
    why: dict[str, list[str]] = {}
    for name, reason in projection.idle.items():
        why.setdefault(reason, []).append(name)
    for name, r in projection.results.items():
        if not r.handled.any():
            why.setdefault(r.notes[0] if r.notes else "no op of this trace is of a kind it models", []).append(name)
    return why


def _why_nothing(a: Trace, b: Trace, projection: Projection, alignment: Alignment, actual: np.ndarray) -> str:
    """One sentence: what each run holds, what aligned, what was projected, and so why nothing is evaluated."""
    ia = alignment.index_a
    parts = [f"A has {_inventory(a)}", f"B has {_inventory(b)}"]
    if len(ia):
        parts.append(f"{plural(len(ia), 'op pair')} aligned ({_inventory(a, ia)})")
    else:
        parts.append("no op of A aligned with one of B")
    unmatched = [f"{_inventory(t, rows)} in {label}" for label, t, rows in
                 (("A", a, alignment.unmatched_a), ("B", b, alignment.unmatched_b)) if len(rows)]
    if unmatched:
        parts.append("unmatched: " + ", ".join(unmatched).replace(" in A, ", " in A; ") if len(unmatched) > 1
                     else "unmatched: " + unmatched[0])
    handled = projection.handled_by_any
    n_projected = int(np.count_nonzero(handled))
    if not n_projected:
        parts.append("no model projected any op of A")
    else:
        proj_rows = np.flatnonzero(handled)
        paired = handled[ia]
        if not paired.any():
            parts.append(f"the {plural(n_projected, 'projected op')} of A ({_inventory(a, proj_rows)}) "
                         f"{'has' if n_projected == 1 else 'have'} no partner in B")
        else:
            parts.append(f"the {plural(int(paired.sum()), 'projected and aligned op')} "
                         f"took no GPU time on B ({plural(int(np.count_nonzero(actual[paired] <= 0)), 'op')})")
    idle = _idle_models(projection)
    if idle:
        parts.append("models that projected nothing: "
                     + "; ".join(f"{', '.join(names)} ({why})" for why, names in idle.items()))
    return "nothing to evaluate: " + "; ".join(parts)


def _what_to_do(projection: Projection) -> str:
    """The hint of ``NothingToEvaluate``."""
    if any("metrics" in why for why in _idle_models(projection)):
        return ("Give --metrics (Nsight Compute) for the kernel models, or compare traces that share "
                "copies of the same kinds")
    return "Compare two runs of the same program, with ops of the kinds the models project (`nodecast models`)"
