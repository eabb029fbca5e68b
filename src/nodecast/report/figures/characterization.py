"""Figures: AHEAD's characterization (Fig. 1a/1b) and evaluation box plots (Fig. 11).

Every figure is written through a temporary file and renamed into place. PNG
or SVG is chosen from the output file's extension.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from nodecast.errors import InputError  # noqa: E402
from nodecast.fileio import atomic_path, check_suffix  # noqa: E402

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def check_figure_path(path: str | Path) -> Path:
    """The output path, if its extension is a figure format nodecast writes."""
    return check_suffix(path, FIGURE_SUFFIXES, "a figure")


def save(fig: plt.Figure, path: str | Path) -> Path:
    """Save ``fig`` atomically and close it."""
    path = check_figure_path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def characterization_figure(char, path: str | Path) -> Path:  # noqa: ANN001 (Characterization)
    """Stacked bars of the size-based (left) and time-based (right) transfer distributions."""
    size_d, time_d = char.size_distribution, char.time_distribution
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    colors = plt.cm.viridis(np.linspace(0.05, 0.95, len(size_d.columns)))
    for ax, dist, title, ylabel in (
        (axes[0], size_d, "(a) size-based: share of transfer count", "% of all transfers"),
        (axes[1], time_d, "(b) time-based: share of transfer GPU time", "% of all transfer GPU time"),
    ):
        bottom = np.zeros(len(dist.index))
        for j, col in enumerate(dist.columns):
            values = 100 * dist[col].to_numpy()
            ax.bar(dist.index, values, bottom=bottom, color=colors[j], label=col, edgecolor="white", linewidth=0.5)
            bottom += values
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 100)
        ax.tick_params(axis="x", rotation=20)
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(title="transfer size", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    name = Path(char.source).name or "trace"
    fig.suptitle(
        f"{name}: {char.n_transfers:,} transfers, {100 * char.transfer_share:.1f} % of kernel+transfer GPU time",
        fontsize=11,
    )
    return save(fig, path)


def error_boxplot(evaluation, path: str | Path) -> Path:  # noqa: ANN001 (Evaluation)
    """Box plots of per-op absolute percentage error per model, one panel per transfer category.

    Whiskers at 1.5 IQR as in AHEAD Fig. 11; each panel's legend gives the WMAPE.
    """
    from nodecast.evaluate import ape, wmape

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
