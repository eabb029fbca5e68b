"""The page of a projection (``nodecast project --html``): every op's GPU time on B, per model.

Headline: per kind of op (transfers, kernels), its GPU time on B by the
first model of ``nodecast forecast``'s chain, the other models' totals as
the interval. Inputs: the trace, both machines with the source of each
value, the models, the command line. Tables: GPU time per category on A and
per model on B; the kernels with the most time. Figures: GPU time per
category on A and on B by each model that is not a baseline; the kernels on
A and on B. Not modelled: the ops no model projects, and every note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from nodecast.cost.project import NOT_PROJECTED, TOTAL_PROJECTED, Projection
from nodecast.report import html as rh
from nodecast.report.terminal.project import summary_shown
from nodecast.words import plural
from nodecast.traces.kinds import OpKind

#: Kernels shown in the per-kernel table and figure, by time on A.
TOP_KERNELS = 30


def kernel_times(proj: Projection, top: int = TOP_KERNELS) -> tuple[pd.DataFrame, int]:
    """The ``top`` kernels (by name) with the most time on A: launches, time on A and per kernel model on B (s,
    NaN where a model left some launch unprojected); and how many kernel names there are."""
    tr = proj.trace
    k = tr["kind"] == OpKind.KERNEL
    models = [m.name for m in proj.models if m.kind == "kernel"]
    if not k.any():
        return pd.DataFrame(columns=["kernel", "launches", "on A", *models]), 0
    df = pd.DataFrame({"kernel": tr.kernel_names()[k], "on A": proj.source_s[k],
                       **{m: proj.results[m].time_s[k] for m in models}})
    agg = {"launches": ("on A", "size"), "on A": ("on A", "sum")}
    agg.update({m: (m, lambda v: v.sum() if v.notna().all() else np.nan) for m in models})
    out = df.groupby("kernel", sort=False).agg(**agg).reset_index()
    out = out.sort_values("on A", ascending=False, kind="stable").head(top).reset_index(drop=True)
    return out, int(df["kernel"].nunique())


def projection_page(proj: Projection, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``proj`` (see the module docstring)."""
    tr = proj.trace
    src, dst = proj.source.name, proj.target.name
    page = rh.Page(f"Projection of {Path(tr.meta.source).name}: {src} → {dst}")
    page.headline = rh.headline(proj.headline(), note="GPU time: the sum of the ops' durations (no overlap or "
                                "dependency: nodecast forecast replays them). Interval: the other models' totals "
                                "over the same ops.", notes=proj.all_notes())
    n_sync = int(np.count_nonzero(tr["kind"] == OpKind.SYNC))
    summary = (f"{tr.meta.format}; {plural(len(tr) - n_sync, 'GPU op')}"
               + (f" and {plural(n_sync, 'synchronisation record')} (not GPU work, not projected)" if n_sync else ""))
    page.inputs = rh.inputs(rh.run_inputs(tr.meta.source, command, [proj.source, proj.target],
                                          {m.name: m.description for m in proj.models}, summary))
    shown, partial = summary_shown(proj)
    page.tables.append(rh.table(shown, {"ops": "count", "bytes": "B", "source_s": "s",
                                        **dict.fromkeys(proj.results, "s"), **{f"{n}_ops": "count" for n in partial}},
                                title=f"GPU time on {src} (source_s) and projected on {dst} per model",
                                caption=f"—: not projected by that model; '{TOTAL_PROJECTED}' sums the ops some model "
                                        f"projected, '{NOT_PROJECTED}' the others; <model>_ops: the ops in a model's "
                                        "sum where it differs."))
    kernels, n_kernels = kernel_times(proj)
    if len(kernels):
        page.tables.append(rh.table(kernels, {"launches": "count", "on A": "s",
                                              **{c: "s" for c in kernels.columns[3:]}},
                                    title=f"Kernels with the most time on A ({len(kernels):,} of {n_kernels:,} names)",
                                    caption="—: the model left some launch of that kernel unprojected."))
    per_cat = shown[~shown["category"].isin([TOTAL_PROJECTED, NOT_PROJECTED])]
    models = [m.name for m in proj.models if not m.baseline]
    if len(per_cat) and models:
        page.figures.append(rh.bars(per_cat.rename(columns={"source_s": f"on {src} (A)"}), "category",
                                    [f"on {src} (A)", *models], "s", f"GPU time per category on A and on {dst} (B)",
                                    what="GPU time (sum of op durations)", anchor="per-category"))
    kernel_models = [c for c in kernels.columns[3:] if c in models][:3]
    if len(kernels) and kernel_models:
        page.figures.append(rh.bars(kernels.head(20).rename(columns={"on A": f"on {src} (A)"}), "kernel",
                                    [f"on {src} (A)", *kernel_models], "s", "GPU time per kernel (the 20 with the most "
                                    "time on A)", what="GPU time (sum over launches)", anchor="per-kernel"))
    unhandled = proj.unhandled().rename(columns={"source_s": "time on A"})
    page.not_modelled = rh.not_modelled(unhandled, proj.all_notes(), {"ops": "count", "time on A": "s"},
                                        none_kept="Every GPU op was projected by some model.")
    return page


@rh.render.register(Projection)
def render_projection(proj: Projection, path: str | Path, command: Sequence[str] | str | None = None,
                      **_: object) -> Path:
    """Write the page of ``proj`` to ``path`` (.html)."""
    return rh.write_page(projection_page(proj, command), path)
