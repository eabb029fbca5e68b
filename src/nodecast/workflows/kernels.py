"""Project the kernels of an Nsight Compute profile onto another GPU: the result of ``nodecast kernels`` and ``roofline``.

``project_kernel_metrics`` reads nothing itself: it takes the metrics
(``traces.ncu.read_ncu_csv``), the two machines and the model names, runs
every kernel model (``cost.kernels.project_metrics``: the hierarchical
roofline of Van Lanker et al., Euro-Par 2024, and the kernel baselines) and,
with the same program's launches measured on the target, each model's error
against them (MAPE = 100 mean(|A - P| / A) over launches, the roofline
paper's metric; WMAPE = 100 sum|A - P| / sum A). It returns one
``KernelsResult``: the per-launch table, the per-kernel table with its total
row, the notes and the headline numbers, which ``nodecast.report`` prints,
writes (CSV/Parquet/JSON) and puts on a page.

``kernel_roofline`` picks one kernel (all its launches summed, or one) and
returns its roofline projection (``KernelRoofline``), which
``report.figures`` draws as the paper's Fig. 2. Times are seconds, rates
FLOP/s, bandwidths bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.headline import Number

if TYPE_CHECKING:
    from nodecast.machines import Machine
    from nodecast.cost.kernels import KernelProjection
    from nodecast.models.roofline_equations import RooflineProjection
    from nodecast.models.sass import SassComparison
    from nodecast.traces.ncu import KernelMetrics


@dataclass
class TargetErrors:
    """Each kernel model's error against the same program's launches measured on the target.

    Attributes:
        table: one row per model (``unchanged``, the source time, first):
            ``model``, ``type`` (reference, baseline or model), ``MAPE`` and
            ``WMAPE`` (%), ``ops`` (launches compared).
        paired: launches paired by kernel name and occurrence.
        unmatched_source, unmatched_target: launches of either run left unpaired.
        errors: model -> per-launch error 100 |P - A| / A (%), over the paired launches it projected.
        measured_s: time of the paired launches measured on the target (s).
    """

    table: pd.DataFrame
    paired: int
    unmatched_source: int
    unmatched_target: int
    errors: dict[str, np.ndarray] = field(default_factory=dict)
    measured_s: float = float("nan")


@dataclass
class KernelsResult:
    """Every kernel model's projection of one profile's launches, with the tables and numbers people read.

    Attributes:
        projection: the models' results per launch (``KernelProjection``).
        launches: one row per launch (``KernelProjection.launches``; SI units).
        files: the Nsight Compute CSVs read.
        against_target: the models' errors against a run on the target (``--target-metrics``), or None.
    """

    projection: KernelProjection
    launches: pd.DataFrame
    files: list[str] = field(default_factory=list)
    against_target: TargetErrors | None = None

    @property
    def source(self) -> Machine:
        return self.projection.source

    @property
    def target(self) -> Machine:
        return self.projection.target

    @property
    def models(self) -> list[str]:
        """The models that ran, in the order they ran."""
        return list(self.projection.results)

    def kernel_count(self) -> int:
        return len(self.projection.metrics.kernel_names)

    def numbered(self) -> list[str]:
        """Labels numbered because different kernels' short names coincide (``name #1``, ``name #2``)."""
        from nodecast.cost.kernels import short_kernel_name

        return sorted({lab for full, lab in zip(self.launches["kernel"], self.launches["label"], strict=True)
                       if lab != short_kernel_name(full)})

    def notes(self) -> list[str]:
        """The models' notes, each prefixed with its model's name."""
        return self.projection.notes()

    def table(self, per_launch: bool = False) -> pd.DataFrame:
        """The table ``nodecast kernels`` prints, in SI units, with a ``total`` row last.

        One row per kernel (columns ``kernel`` — the short label —,
        ``launches``, ``source_s``, ``bound``: the largest term on the target
        for most of the kernel's time, ``roofline_low_s``/``roofline_high_s``:
        the roofline's interval (eq. 9), ``<model>_s``: each model's time,
        summed over launches), or one row per launch (``occurrence`` instead
        of ``launches``). A model's total is NaN when it left a launch unprojected.
        """
        proj = self.projection
        if per_launch:
            cols = ["label", "occurrence", "source_s"]
            if proj.roofline is not None:
                cols += ["bound_target", "roofline_low_s", "roofline_high_s"]
            cols += [f"{n}_s" for n in proj.results]
            table = self.launches[cols].copy()
        else:
            table = proj.summary().drop(columns="kernel")
        total = {k: v for k, v in proj.total().items() if k in table.columns}
        table = pd.concat([table, pd.DataFrame([total])], ignore_index=True).rename(columns={"label": "kernel"})
        if "bound_target" in table:
            table = table.rename(columns={"bound_target": "bound"})
        return table

    def headline_model(self) -> str | None:
        """The model the headline shows: the roofline when it projected every launch, else the first that did."""
        total = self.projection.total()
        ran = [m for m in self.models if np.isfinite(float(total.get(f"{m}_s", np.nan)))]
        return "roofline" if "roofline" in ran else (ran[0] if ran else None)

    def headline(self) -> list[Number]:
        """Kernel time measured on the source, projected on the target (with the roofline's interval), measured there."""
        total = self.projection.total()
        out = [Number(f"kernel time on {self.source.name} (measured under ncu)", float(total["source_s"]), "s",
                      note=f"{len(self.launches):,} launches of {self.kernel_count():,} kernels")]
        model = self.headline_model()
        if model is not None:
            low = high = None
            note = f"model {model}"
            if model == "roofline" and np.isfinite(float(total.get("roofline_low_s", np.nan))):
                low, high = float(total["roofline_low_s"]), float(total["roofline_high_s"])
                note += "; interval: the roofline's lowest and highest level (eq. 9)"
            out.append(Number(f"projected on {self.target.name}", float(total[f"{model}_s"]), "s", low, high, note))
        t = self.against_target
        if t is not None:
            out.append(Number(f"measured on {self.target.name}", t.measured_s, "s",
                              note=f"the {t.paired:,} launches paired with the target run"))
            if model is not None:
                row = t.table[t.table["model"] == model]
                if len(row):
                    out.append(Number(f"WMAPE of {model} against it", float(row["WMAPE"].iat[0]), "%",
                                      note=f"MAPE {float(row['MAPE'].iat[0]):.1f} % over {int(row['ops'].iat[0]):,} launches"))
        return out


def target_errors(metrics: KernelMetrics, measured: KernelMetrics, source: Machine, target: Machine,
                  models: list[str] | None = None) -> TargetErrors:
    """MAPE and WMAPE of every kernel model against the launches measured on the target (same program)."""
    from nodecast.workflows.evaluate import evaluate
    from nodecast.traces.ncu import trace_from_metrics

    ev = evaluate(trace_from_metrics(metrics), trace_from_metrics(measured), source, target,
                  models, kind="kernel" if models is None else None, metrics=metrics)
    al = ev.alignment
    table = ev.table()[["model", "MAPE", "all", "ops"]].rename(columns={"all": "WMAPE"})
    baselines = {x.name for x in ev.projection.models if x.baseline}
    table.insert(1, "type", ["reference" if m == "unchanged" else "baseline" if m in baselines else "model"
                             for m in table["model"]])
    errors = {}
    for name, p in ev.projected_s.items():
        ok = ~np.isnan(p)
        errors[name] = 100.0 * np.abs(p[ok] - ev.actual_s[ok]) / ev.actual_s[ok]
    return TargetErrors(table, len(ev.actual_s), len(al.unmatched_a), len(al.unmatched_b), errors,
                        float(np.sum(ev.actual_s)))


def project_kernel_metrics(
    metrics: KernelMetrics,
    source: Machine,
    target: Machine,
    models: list[str] | None = None,
    sass: SassComparison | None = None,
    measured: KernelMetrics | None = None,
    files: list[str] | None = None,
) -> KernelsResult:
    """Project every launch of ``metrics`` from ``source`` onto ``target`` with the kernel models.

    ``models``: names (default: the roofline and the kernel baselines);
    ``sass``: the two builds' SASS for the roofline's instruction ratios;
    ``measured``: the same program's metrics on the target, to score every
    model; ``files``: the CSVs ``metrics`` came from (shown in reports).
    """
    from nodecast.cost.kernels import project_metrics

    proj = project_metrics(metrics, source, target, models, sass)
    launches = proj.launches()
    against = target_errors(metrics, measured, source, target, models) if measured is not None else None
    return KernelsResult(proj, launches, [str(f) for f in files or []], against)


# -- one kernel's roofline (nodecast roofline) -------------------------------------------------------------------
@dataclass
class KernelRoofline:
    """One kernel's hierarchical roofline projection (row 0 of ``projection``): the paper's Fig. 2.

    ``kernel``: its full name; ``what``: which launches (``"3 launches summed"``, ``"launch 2"``).
    """

    kernel: str
    what: str
    projection: RooflineProjection


def select_kernel(names: list[str], pattern: str) -> str:
    """The one kernel name equal to ``pattern``, else the one containing it; InputError otherwise."""
    if pattern in names:
        return pattern
    hits = [n for n in names if pattern in n]
    if len(hits) == 1:
        return hits[0]
    from nodecast.cost.kernels import short_kernel_name

    if not hits:
        known = "; ".join(short_kernel_name(n, 50) for n in names[:6])
        raise InputError(f"no kernel name contains {pattern!r}", key="--kernel", hint=f"Kernels: {known}")
    shown = "; ".join(short_kernel_name(n, 50) for n in hits[:4])
    raise InputError(f"{len(hits)} kernels contain {pattern!r}", key="--kernel",
                     hint=f"Give a longer part of the name: {shown}")


def kernel_roofline(metrics: KernelMetrics, source: Machine, target: Machine, pattern: str,
                    launch: int | None = None) -> KernelRoofline:
    """The roofline projection of the kernel ``pattern`` names: all its launches summed, or launch ``launch`` (0-based).

    InputError when no kernel or several match, when ``launch`` is out of
    range, or when the kernel executes no floating-point instruction (no
    operational intensity).
    """
    from nodecast.models.roofline_equations import KernelInputs, aggregate_launches, project_kernels
    from nodecast.models.roofline_figures import gpu_figures

    name = select_kernel(metrics.kernel_names, pattern)
    rows = np.flatnonzero(metrics.table["kernel"].to_numpy() == name)
    if launch is not None:
        if not 0 <= launch < len(rows):
            raise InputError(f"kernel has {len(rows)} launches (0..{len(rows) - 1})", key="--launch")
        one = metrics.take([rows[launch]])
        what = f"launch {launch}"
    else:
        one = aggregate_launches(metrics, rows)
        what = f"{len(rows)} launches summed" if len(rows) > 1 else "1 launch"
    inp = KernelInputs.from_metrics(one)
    if not inp.flop()[0] > 0:
        raise InputError("the kernel executes no floating-point instruction (FLOP = 0): it has no "
                         "operational intensity to draw", key="--kernel",
                         hint="Choose a kernel with FP work; `nodecast kernels` still projects this one")
    src, tgt = gpu_figures(source), gpu_figures(target, reference=source)
    return KernelRoofline(name, what, project_kernels(inp, src, tgt))
