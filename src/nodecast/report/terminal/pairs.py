"""``nodecast evaluate DIR_A DIR_B`` at the terminal: WMAPE per pair and model with the pooled row, the kernels
pooled over all pairs, then the notes (``PairsEvaluation.all_notes``: the pairs not evaluated, the files without a
partner, every pair's notes once each)."""

from __future__ import annotations

from rich.console import Console

from nodecast.workflows.evaluate_kernels import PairsEvaluation
from nodecast.report import tables as t
from nodecast.report.terminal import render
from nodecast.words import plural
from nodecast.text import shown


@render.register(PairsEvaluation)
def render_pairs(result: PairsEvaluation, console: Console | None = None, **_: object) -> None:
    """Print ``result``."""
    console = console or t.console()
    same = set(result.machine_pairs().values())
    machines = f", all {shown(next(iter(same)))}" if len(same) == 1 else ""
    console.print(t.plain(f"{plural(len(result.outcomes), 'pair')} of traces with the same file name in "
                          f"{shown(result.dir_a)} (A) and {shown(result.dir_b)} (B); evaluated "
                          f"{len(result.evaluated):,}{machines}"), soft_wrap=True)
    summary = result.summary_table()
    models = [c for c in summary.columns if c not in ("pair", "machines")]
    t.render(summary, "WMAPE (%) of projected GPU time per pair and model, over the evaluated ops the model "
             "projects (transfer models: copies; kernel models: kernels; unchanged: every op); 'all pairs' pools "
             "them (100 x sum|A - P| / sum A)", dict.fromkeys(models, t.fmt_pct), console)
    pooled = result.pooled()
    kernels = pooled[pooled["category"] == "kernel"].drop(columns="category")
    if len(kernels):
        t.render(kernels, "Kernels over all pairs: WMAPE and MAPE (%) of the aligned launches",
                 {"WMAPE": t.fmt_pct, "MAPE": t.fmt_pct, "ops": t.fmt_int, "pairs": t.fmt_int}, console)
    for note in result.all_notes():  # the pairs not evaluated, the files without a partner, every pair's notes
        console.print(t.plain(f"note: {note}"), soft_wrap=True)
