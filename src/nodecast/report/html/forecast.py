"""The page of a one-target forecast (``nodecast forecast --html``).

Headline: end to end measured on A and forecast on B with its interval, and
the speed-up A / B (``report.speedup``), then the one line saying what B kept
of A and what the models moved (``cost.change``). Inputs: the trace, both machines
with the source of each value, the model chain per op kind, the command
line. Tables: the terminal's (end to
end and GPU-busy, GPU time per category, critical paths, the ops that moved
the end to end most, where each op's time came from) and the kernels with the
most time. Figures: the measured (A) and forecast (B) timelines, zoomable;
the critical paths by category; GPU time per category and per kernel on A
and B. Not modelled: the GPU ops kept at their time on A, and every note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.engine import metrics
from nodecast.cost.change import UNCHANGED
from nodecast.workflows.forecast import FORECAST, MEASURED, ForecastResult
from nodecast.graph.opgraph import OpKind
from nodecast.report import html as rh
from nodecast.report.html._graph import critical_path_frame, host_work, timeline_ops, trace_summary
from nodecast.speedup import MEANING, SPEEDUP
from nodecast.report.terminal.forecast import whole_table

#: Kernels shown in the per-kernel table and figure, by time on A.
TOP_KERNELS = 30


def kernel_times(result: ForecastResult, top: int = TOP_KERNELS) -> tuple[pd.DataFrame, int]:
    """The ``top`` kernels (by name) with the most time on A or B: launches, time on A, time on B (s); and how
    many kernel names there are in all."""
    g = result.graph
    k = g.ops["kind"] == OpKind.KERNEL
    if not k.any():
        return pd.DataFrame(columns=["kernel", "launches", "on A", "on B"]), 0
    code, texts = metrics.name_codes(g.names)  # grouped by code, named afterwards: not a text per launch
    df = pd.DataFrame({"kernel": code[g.ops["name_id"][k]], "on A": g.ops["source_dur_s"][k],
                       "on B": result.costs.duration_s[k]}, copy=False)
    out = df.groupby("kernel", sort=False).agg(launches=("on A", "size"), **{"on A": ("on A", "sum"),
                                                                          "on B": ("on B", "sum")}).reset_index()
    out["kernel"] = np.asarray(texts, dtype=object)[out["kernel"].to_numpy(np.int64)]
    order = out[["on A", "on B"]].max(axis=1).sort_values(ascending=False, kind="stable").index
    return out.loc[order].head(top).reset_index(drop=True), len(out)


def forecast_page(result: ForecastResult, command: Sequence[str] | str | None = None, *, top: int = 10) -> rh.Page:
    """The page of ``result`` (see the module docstring); ``top``: how many movers to list."""
    g = result.graph
    a, b = result.source.name, result.target.name
    page = rh.Page(f"Forecast of {Path(g.source).name} on {b}")
    page.headline = rh.headline(result.headline(), note=f"End to end: from the {metrics.end_to_end_start(g)} to the "
                                "end of the last GPU op. Forecast: the program's operation graph replayed with every "
                                "op's time on B from the models.", notes=result.notes,
                                change=[result.change.text] if result.change is not None else [])
    page.inputs = rh.inputs(rh.run_inputs(g.source, command, [result.source, result.target],
                                          {kind: " → ".join(chain) + " (first that handles the op)"
                                           for kind, chain in result.costs.chains.items()}, trace_summary(g)))
    whole = whole_table(result)
    page.tables.append(rh.table(whole, {MEASURED: "s", UNCHANGED: "s", FORECAST: "s", SPEEDUP: "x"},
                                title=f"Whole application, {a} (A) → {b} (B)",
                                caption=f"{UNCHANGED}: every op at its time on A, the graph replayed: the forecast "
                                        f"when the models move nothing. {SPEEDUP}: measured on A / forecast on B, "
                                        f"{MEANING}."))
    cats = result.categories()
    if not result.costs.has_interval:
        cats = cats.drop(columns=["low_s", "high_s"])
    cats = cats.rename(columns={"source_s": "on A", "target_s": "on B", "low_s": "low on B", "high_s": "high on B"})
    page.tables.append(rh.table(cats, {c: "count" if c == "ops" else "s" for c in cats.columns
                                       if c not in ("category", "models")},
                                title="GPU time per category (sum of op durations) and the models that gave it"))
    cp = result.critical_paths().rename(columns={"on_a_s": "on A (replayed)", "on_b_s": "on B (forecast)",
                                                 "change_s": "change"})
    if len(cp):
        page.tables.append(rh.table(cp, dict.fromkeys(["on A (replayed)", "on B (forecast)", "change"], "s"),
                                    title="Critical path by category (each column sums to its end to end)"))
    movers = result.movers(top).rename(columns={"on_a_s": "on A's path", "on_b_s": "on B's path",
                                                "change_s": "change"})
    if top and len(movers):
        page.tables.append(rh.table(movers, {"ops": "count", **dict.fromkeys(["on A's path", "on B's path", "change"],
                                                                            "s")},
                                    title="Ops that moved the end to end most (time they add to the critical path)"))
    prov = result.costs.provenance(g).rename(columns={"source_s": "time on A", "target_s": "time on B"})
    page.tables.append(rh.table(prov, {"ops": "count", "time on A": "s", "time on B": "s"},
                                title="Where each op's time on B comes from",
                                caption="source: kept at its time on A; host: host work."))
    kernels, n_kernels = kernel_times(result)
    if len(kernels):
        page.tables.append(rh.table(kernels, {"launches": "count", "on A": "s", "on B": "s"},
                                    title=f"Kernels with the most time ({len(kernels):,} of {n_kernels:,} names)"))
    page.figures.append(rh.timeline(timeline_ops(g, result.measured), timeline_ops(g, result.forecast),
                                    (f"measured on {a} (A)", f"forecast on {b} (B)"),
                                    title="Measured and forecast timelines"))
    breakdown = critical_path_frame({f"on {a} (A, replayed)": result.source_path.breakdown_s,
                                     f"on {b} (B, forecast)": result.target_path.breakdown_s})
    if not breakdown.empty:
        page.figures.append(rh.critical_path(breakdown))
    per_cat = result.categories().rename(columns={"source_s": f"on {a} (A)", "target_s": f"on {b} (B)"})
    if len(per_cat):
        page.figures.append(rh.bars(per_cat, "category", [f"on {a} (A)", f"on {b} (B)"], "s",
                                    "GPU time per category", what="GPU time (sum of op durations)",
                                    anchor="per-category"))
    if len(kernels):
        page.figures.append(rh.bars(kernels.rename(columns={"on A": f"on {a} (A)", "on B": f"on {b} (B)"}), "kernel",
                                    [f"on {a} (A)", f"on {b} (B)"], "s", "GPU time per kernel",
                                    what="GPU time (sum over launches)", anchor="per-kernel"))
    page.not_modelled = rh.not_modelled(result.kept().rename(columns={"source_s": "time on A"}), result.notes,
                                        {"ops": "count", "time on A": "s"}, none_kept="No GPU op was kept at its "
                                        "source time: every GPU op was modelled.", host=host_work(result))
    return page


@rh.render.register(ForecastResult)
def render_forecast(result: ForecastResult, path: str | Path, command: Sequence[str] | str | None = None, *,
                    top: int = 10, **_: object) -> Path:
    """Write the page of ``result`` to ``path`` (.html)."""
    return rh.write_page(forecast_page(result, command, top=top), path)
