"""The end to end per target of a forecast (``nodecast forecast --png``): the critical path's split per target."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nodecast.graph.targets import Comparison
from nodecast.report.figures import check_figure_path, draw, plt, save
from nodecast.report.words import plural


@draw.register(Comparison)
def comparison_chart(comparison: Comparison, path: str | Path, **_: object) -> Path:
    """Horizontal bars: end to end on A (replayed) and forecast per target, split into the critical path's
    GPU, host and other (launch, dependency) time, with the interval as whiskers. PNG/SVG/PDF by suffix."""
    check_figure_path(path)
    table = comparison.table()
    labels = [f"{comparison.source} (A, replayed)", *table["target"]]
    n = len(labels)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * n))
    y = np.arange(n)[::-1]
    a = comparison.replayed_end_to_end_s
    parts = {"GPU work on the critical path": table["path_gpu_s"], "host work": table["path_host_s"],
             "launch, dependency and other waits": table["path_other_s"]}
    left = np.zeros(n - 1)
    colors = ("#4c72b0", "#dd8452", "#8c8c8c")
    for (name, values), color in zip(parts.items(), colors, strict=True):
        v = np.clip(values.to_numpy(float), 0, None)
        ax.barh(y[1:], v, left=left, color=color, label=name)
        left += v
    ax.barh(y[:1], [a], color="#55a868", label="A: replayed end to end")
    err = np.vstack([table["end_to_end_s"] - table["low_s"], table["high_s"] - table["end_to_end_s"]])
    if np.any(err > 0):
        ax.errorbar(table["end_to_end_s"], y[1:], xerr=err, fmt="none", ecolor="black", capsize=3)
    ax.axvline(comparison.measured_end_to_end_s, color="black", lw=0.8, ls="--", label="A: measured end to end")
    ax.set_yticks(y, labels)
    ax.set_xlabel("end to end: first API call to last GPU op end (s)")
    ax.set_title(f"{Path(comparison.trace).name}: forecast on {plural(n - 1, 'target')}", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.5 / (1 + 0.3 * n)), ncol=2, frameon=False)
    return save(fig, path)
