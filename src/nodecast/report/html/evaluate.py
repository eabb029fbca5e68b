"""The page of an evaluation (``nodecast evaluate A B --html``): run A projected onto B against run B.

Headline: the whole run's end to end on B, as measured and as forecast from
run A, and the error; the lowest per-op WMAPE of a model and that of keeping
A's times. Inputs: both traces, both machines with the source of each value,
the models, the command line. Tables: WMAPE per model and transfer kind, the
kernels' errors, the unmatched ops, the whole run. Figures: the per-op error
distribution per model (AHEAD Fig. 11), WMAPE per model and kind, run B's
measured timeline over run A's forecast on B, and the whole run's quantities.
Not modelled: the GPU ops the forecast kept at their time on A, and every note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nodecast.workflows.evaluate import TOTALS_ONLY, Evaluation, ape
from nodecast.report import html as rh
from nodecast.report.html._graph import host_work, timeline_ops
from nodecast.words import plural


def evaluation_page(ev: Evaluation, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``ev`` (see the module docstring)."""
    a, b = ev.projection.trace, ev.trace_b
    src, dst = ev.source.name, ev.target.name
    page = rh.Page(f"Evaluation of {src} → {dst}: {Path(a.meta.source).name} against {Path(b.meta.source).name}")
    # End to end is only in the whole-run comparison, which says where it starts (a run may have no API records).
    whole = "" if ev.whole is None else f" End to end: {ev.whole.end_to_end_start()} to the end of the last GPU op."
    page.headline = rh.headline(ev.headline(), note="WMAPE = 100 × Σ|actual − projected| / Σ actual over the ops of "
                                f"run A paired with ops of run B (AHEAD VI.C).{whole}", notes=ev.all_notes())
    al = ev.alignment
    summary = (f"A: {plural(len(a), 'op')} on {src}; B: {plural(len(b), 'op')} on {dst}; aligned "
               f"{plural(len(al.index_a), 'op pair')}; evaluated {plural(len(ev.actual_s), 'projected op')}")
    page.inputs = rh.inputs(rh.run_inputs(f"{a.meta.source} (A), {b.meta.source} (B)", command, [ev.source, ev.target],
                                          {m.name: m.description for m in ev.projection.models}, summary))
    table = ev.typed_table()
    cats = [c for c in table.columns if c not in ("model", "type", "ops", "MAPE")]
    if not ev.totals_only:  # with no op pair the table would be empty: the kernel totals are the comparison
        page.tables.append(rh.table(table, {**dict.fromkeys(cats, "%"), "MAPE": "%", "ops": "count"},
                                    title=f"WMAPE (%) of projected GPU time, {src} → {dst}, per model and transfer "
                                          "kind",
                                    caption="MAPE = 100 × mean(|A − P| / A) over all the model's ops; 'unchanged': "
                                            "the op keeps its time on A; 'scaled': A's time × the model's B/A "
                                            "ratio."))
    kernels = ev.kernels()
    if len(kernels):
        page.tables.append(rh.table(kernels, {"launches": "count", "MAPE": "%", "WMAPE": "%", "projected_s": "s",
                                              "actual_s": "s", "total_error": "%"},
                                    title=f"Kernels: no launch paired, {TOTALS_ONLY} over every kernel"
                                    if ev.totals_only else
                                    "Kernels: errors of the aligned launches, and totals over every kernel"))
    unmatched = ev.unmatched()
    if len(unmatched):
        page.tables.append(rh.table(unmatched, {"ops": "count", "bytes": "B"}, title="Unmatched ops (not evaluated)"))
    if ev.whole is not None:
        page.tables.append(rh.table(ev.whole.table(), {"on A": "s", "actual on B": "s", "forecast on B": "s",
                                                       "error": "share"},
                                    title=f"Whole run: A forecast on {dst} against B as measured"))
    errors = {}
    for name, p in ev.projected_s.items():
        ok = ~np.isnan(p)
        if ok.any():
            errors[name] = ape(ev.actual_s[ok], p[ok])
    if errors:  # none when no op paired (the totals are then the comparison)
        page.figures.append(rh.error_boxes(errors, title="Per-op error per model (AHEAD Fig. 11)",
                                           what="per-op |actual − projected| / actual"))
        page.figures.append(rh.bars(table, "model", cats, "%", "WMAPE per model and transfer kind", what="WMAPE",
                                    anchor="wmape"))
    if ev.whole is not None:
        w = ev.whole
        page.figures.append(rh.timeline(timeline_ops(w.graph_b, w.measured_b),
                                        timeline_ops(w.forecast.graph, w.forecast.forecast),
                                        (f"run B measured on {dst}", f"run A forecast on {dst}"),
                                        title="Run B as measured, run A as forecast on B"))
        page.figures.append(rh.bars(w.table(), "quantity", ["on A", "actual on B", "forecast on B"], "s",
                                    "The whole run: on A, actual on B, forecast on B", what="time",
                                    anchor="whole-run"))
    kept, host = None, ""
    if ev.whole is not None:
        kept = ev.whole.forecast.kept().rename(columns={"source_s": "time on A"})
        host = host_work(ev.whole.forecast)
    page.not_modelled = rh.not_modelled(kept, list(dict.fromkeys(ev.all_notes())), {"ops": "count", "time on A": "s"},
                                        none_kept="No GPU op of the whole-run forecast was kept at its time on A."
                                        if ev.whole is not None else "The whole run was not compared (see the notes).",
                                        host=f"Whole run: {host}" if host else "")
    return page


@rh.render.register(Evaluation)
def render_evaluation(ev: Evaluation, path: str | Path, command: Sequence[str] | str | None = None,
                      **_: object) -> Path:
    """Write the page of ``ev`` to ``path`` (.html)."""
    return rh.write_page(evaluation_page(ev, command), path)
