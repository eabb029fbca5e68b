"""The page of many evaluations (``nodecast evaluate DIR_A DIR_B --html``): every pair of traces with the same name.

Headline: the pairs evaluated, the lowest pooled WMAPE of a transfer model
and of a kernel model (each kind ranked among its own), and that of keeping
A's times. Inputs: the two folders, the machines of the pairs,
the command line. Tables: WMAPE per pair and model with the pooled row, the
pooled errors per model and category. Figures: pooled WMAPE per model, and
the spread of the per-pair WMAPE per model. Not modelled: the pairs not
evaluated with their reason, the files without a partner, every pair's notes
once each (``PairsEvaluation.all_notes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nodecast.workflows.evaluate_kernels import PairsEvaluation
from nodecast.report import html as rh
from nodecast.words import plural


def pairs_page(result: PairsEvaluation, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``result`` (see the module docstring)."""
    page = rh.Page(f"Evaluation of {plural(len(result.evaluated), 'pair')} of traces: {result.dir_a} (A) against "
                   f"{result.dir_b} (B)")
    page.headline = rh.headline(result.headline(), note="Pooled WMAPE = 100 × Σ|actual − projected| / Σ actual over "
                                "every evaluated op of every pair.")
    machines = sorted(set(result.machine_pairs().values()))
    page.inputs = rh.inputs(rh.run_inputs(f"{result.dir_a} (A), {result.dir_b} (B)", command,
                                          trace_summary="machines: " + "; ".join(machines)))
    summary = result.summary_table()
    models = [c for c in summary.columns if c not in ("pair", "machines")]
    page.tables.append(rh.table(summary, dict.fromkeys(models, "%"),
                                title="WMAPE (%) per pair and model ('all pairs' pools them)"))
    pooled = result.pooled()
    page.tables.append(rh.table(pooled, {"pairs": "count", "ops": "count", "WMAPE": "%", "MAPE": "%"},
                                title="Pooled over all pairs, per model and category"))
    overall = pooled[pooled["category"] == "all"]
    page.figures.append(rh.bars(overall, "model", ["WMAPE"], "%", "Pooled WMAPE per model", what="WMAPE",
                                anchor="pooled"))
    per_pair = summary[summary["pair"] != "all pairs"]
    page.figures.append(rh.error_boxes({m: per_pair[m].to_numpy(float) for m in models},
                                       title="Per-pair WMAPE per model", what="WMAPE of a pair",
                                       anchor="per-pair"))
    page.not_modelled = rh.not_modelled(None, result.all_notes(), none_kept="Each pair's ops are evaluated as in "
                                        "nodecast evaluate A B; ops no model projects are left out of its errors.")
    return page


@rh.render.register(PairsEvaluation)
def render_pairs(result: PairsEvaluation, path: str | Path, command: Sequence[str] | str | None = None,
                 **_: object) -> Path:
    """Write the page of ``result`` to ``path`` (.html)."""
    return rh.write_page(pairs_page(result, command), path)
