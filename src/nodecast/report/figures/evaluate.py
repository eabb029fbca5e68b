"""Box plots of an evaluation's per-op errors (AHEAD Fig. 11)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nodecast.errors import InputError
from nodecast.workflows.evaluate import Evaluation, ape, wmape
from nodecast.report.figures import draw, plt, save


@draw.register(Evaluation)
def error_boxplot(evaluation: Evaluation, path: str | Path) -> Path:
    """Box plots of per-op absolute percentage error per model, one panel per transfer category.

    Whiskers at 1.5 IQR as in AHEAD Fig. 11; each panel's legend gives the WMAPE.
    """
    cats = sorted(set(evaluation.category.tolist()))
    if not cats:  # ``evaluate`` refuses this case; an Evaluation built by hand may still have it
        raise InputError("nothing was evaluated: no box to draw", key="--png")
    names = list(evaluation.projected_s)
    width = max(5.0, 1.3 * len(names) + 1.5)
    fig, axes = plt.subplots(1, len(cats), figsize=(width * len(cats), 4.8), squeeze=False)
    for ax, cat in zip(axes[0], cats, strict=True):
        sel = evaluation.category == cat
        data, labels = [], []
        for name in names:
            p = evaluation.projected_s[name][sel]
            ok = ~np.isnan(p)
            if not ok.any():
                continue
            a = evaluation.actual_s[sel][ok]
            data.append(ape(a, p[ok]))
            labels.append(f"{name}\nWMAPE {wmape(a, p[ok]):.1f} %")
        ax.boxplot(data, whis=1.5, showfliers=False)
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7, rotation=30, ha="right")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("per-op |actual - projected| / actual (%)")
        ax.set_title(f"{cat} ({int(sel.sum()):,} ops)", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    src, dst = evaluation.projection.source.name, evaluation.projection.target.name
    fig.suptitle(f"Projection error {src} -> {dst} (boxes: Q1-Q3, whiskers 1.5 IQR, outliers hidden)", fontsize=11)
    return save(fig, path)
