"""``nodecast kernels --html``: one page for a profile's kernels projected onto another GPU.

The headline is the kernel time measured on the source and projected on the
target (the roofline's interval, eq. 9, when the roofline projected every
launch), and measured on the target with the headline model's WMAPE when a
target run was given: the numbers ``--json`` writes. Then the inputs (the
Nsight Compute files, both machines with the source of every value, the
models), the per-kernel table with its total, the models' errors against the
target run, and figures: per-kernel times per model, each kernel on both
GPUs' rooflines, the per-launch error distribution per model. The last
section lists the launches a model left at no projection and every note.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nodecast.workflows.kernels import KernelsResult
from nodecast.report import html as rh
from nodecast.report.html import render

#: per-launch rows shown in the page at most (the full table goes to -o)
MAX_LAUNCH_ROWS = 2000
#: kernels drawn in the per-kernel bars (the longest on the source)
MAX_BARS = 25


def _model_descriptions(names: list[str]) -> dict[str, str]:
    from nodecast.models.registry import get_models

    out = {}
    for name in names:
        try:
            out[name] = get_models([name])[0].description
        except Exception:  # noqa: BLE001 (a description is decoration: never fail the page for it)
            out[name] = ""
    return out


def _rooflines(result: KernelsResult) -> list[rh.Figure]:
    """Each kernel (launches summed) at its DRAM intensity under the source's and the target's ceilings."""
    from nodecast.models.roofline_figures import gpu_figures

    launches = result.launches
    if "flop" not in launches or "roofline_s" not in launches:
        return []
    dram = result.projection.metrics.table["dram_bytes"].to_numpy(np.float64)
    df = pd.DataFrame({"kernel": launches["label"], "flop": launches["flop"], "flop_target": launches["flop_target"],
                       "bytes": dram, "source_s": launches["source_s"], "target_s": launches["roofline_s"]})
    g = df.groupby("kernel", sort=False).sum(min_count=1)
    ok = (g["flop"] > 0) & (g["bytes"] > 0)
    if not ok.any():
        return []
    g = g[ok]
    out = []
    for machine, flop, secs, fig_of in ((result.source, g["flop"], g["source_s"], "source"),
                                        (result.target, g["flop_target"], g["target_s"], "target")):
        figs = gpu_figures(machine) if fig_of == "source" else gpu_figures(machine, reference=result.source)
        compute = {f"{p.upper()} FMA": v for p, v in figs.fma.items()}
        memory = {lv.upper(): v for lv, v in figs.bandwidth.items() if lv in ("dram", "l2", "l1")}
        if not compute or not memory:
            continue
        points = pd.DataFrame({"name": g.index, "flop_per_byte": flop / g["bytes"], "flop_per_s": flop / secs})
        what = "measured" if fig_of == "source" else "projected by the roofline"
        out.append(rh.roofline(points, compute, memory, anchor=f"roofline-{fig_of}",
                               title=f"Kernels on {machine.name} ({machine.gpu.model}), {what}; DRAM intensity"))
    return out


@render.register(KernelsResult)
def _(result: KernelsResult, path: str | Path, command: Any = None, per_launch: bool = False) -> Path:
    """The page (``per_launch`` is the terminal's choice of table; the page shows both tables)."""
    src, tgt = result.source, result.target
    page = rh.Page(f"Kernels projected from {src.name} ({src.gpu.model}) onto {tgt.name} ({tgt.gpu.model})")
    page.headline = rh.headline(result.headline())
    names = [Path(f).name for f in result.files]
    common = os.path.commonprefix(names) if len(names) > 3 else ""
    files = f"{common}* ({len(names)} files, in {Path(result.files[0]).parent})" if len(common) > 8 else ", ".join(names)
    files = files or "Nsight Compute metrics"
    page.inputs = rh.inputs(rh.run_inputs(
        files, command, [src, tgt], _model_descriptions(result.models),
        trace_summary=f"{len(result.launches):,} launches of {result.kernel_count():,} kernels (Nsight Compute CSV)"))
    table = result.table()
    units = {c: "s" for c in table.columns if c.endswith("_s")}
    units["launches"] = "count"
    page.tables.append(rh.table(table, units, title="Kernel time per kernel (sums over launches)",
                                caption="source_s: measured under ncu; <model>_s: projected on the target; bound: the "
                                        "largest term on the target; roofline_low_s/high_s: the roofline's interval (eq. 9)."))
    t = result.against_target
    if t is not None:
        page.tables.append(rh.table(t.table, {"MAPE": "%", "WMAPE": "%", "ops": "count"},
                                    title=f"Error against the launches measured on {tgt.name}",
                                    caption=f"{t.paired:,} launches paired by kernel name and occurrence; unmatched: "
                                            f"{t.unmatched_source} source, {t.unmatched_target} target. MAPE = 100 "
                                            "mean(|A − P| / A); WMAPE weights by time; 'unchanged' = the source time."))
    if len(result.launches) <= MAX_LAUNCH_ROWS:
        per = result.table(per_launch=True)
        per = per[per["kernel"] != "total"]
        page.tables.append(rh.table(per, {c: "s" for c in per.columns if c.endswith("_s")} | {"occurrence": "count"},
                                    title="Kernel time per launch"))
    per_kernel = table[table["kernel"] != "total"].sort_values("source_s", ascending=False).head(MAX_BARS)
    values = ["source_s", *[f"{m}_s" for m in result.models]]
    page.figures.append(rh.bars(per_kernel, "kernel", values, "s", anchor="per-kernel",
                                title=f"Per kernel: measured on {src.name} and projected on {tgt.name} per model"
                                      + (f" ({MAX_BARS} longest)" if len(table) - 1 > MAX_BARS else ""),
                                what="kernel time, summed over launches"))
    page.figures.extend(_rooflines(result))
    if t is not None and t.errors:
        page.figures.append(rh.error_boxes({k: v for k, v in t.errors.items() if len(v)}, "%",
                                           title=f"Per-launch error against {tgt.name}",
                                           what="100 × |projected − measured| / measured", anchor="errors"))
    assumptions = [*result.notes()]
    for m in result.models:
        n = int(result.launches[f"{m}_s"].isna().sum())
        if n:
            assumptions.append(f"{m} left {n:,} of {len(result.launches):,} launches without a projection "
                               "(its total is not given)")
    if result.numbered():
        assumptions.append(f"different kernels whose short names coincide are numbered ({', '.join(result.numbered())}) "
                           "in order of first launch; -o writes their full names")
    page.not_modelled = rh.not_modelled(None, assumptions)
    return rh.write_page(page, rh.check_html_path(path))
