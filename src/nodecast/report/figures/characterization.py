"""AHEAD's characterization of a trace (Fig. 1a/1b): size- and time-based transfer distributions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nodecast.workflows.characterize import Characterization
from nodecast.report.figures import draw, plt, save


@draw.register(Characterization)
def characterization_figure(char: Characterization, path: str | Path) -> Path:
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
