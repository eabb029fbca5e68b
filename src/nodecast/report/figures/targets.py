"""The end to end per target of a forecast (``nodecast forecast --png``): the critical path's split per target."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nodecast.engine import metrics
from nodecast.workflows.targets import Comparison
from nodecast.report.figures import check_figure_path, draw, plt, save
from nodecast.speedup import SPEEDUP
from nodecast.report.tables import fmt_ratio, fmt_seconds
from nodecast.words import plural


@draw.register(Comparison)
def comparison_chart(comparison: Comparison, path: str | Path, **_: object) -> Path:
    """Horizontal bars: end to end on A (replayed) and forecast per target, split into the critical path's
    GPU, host and other (launch, dependency) time, with the interval as whiskers and each target's speed-up
    A / B after its bar (``report.speedup``). PNG/SVG/PDF by suffix."""
    check_figure_path(path)
    table = comparison.table()
    labels = [f"{comparison.source} (A, replayed)", *table["target"]]
    n = len(labels)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * n))
    y = np.arange(n)[::-1]
    a = comparison.replayed_end_to_end_s
    split = comparison.source_path_s  # A's replay split as the targets are (empty: only its total is known)
    parts = {"GPU work on the critical path": "path_gpu_s", "host work": "path_host_s",
             "launch, dependency and other waits": "path_other_s"}
    runs = y if split else y[1:]
    left = np.zeros(len(runs))
    colors = ("#4c72b0", "#dd8452", "#8c8c8c")
    for (name, col), color in zip(parts.items(), colors, strict=True):
        v = np.clip(np.array([*([split[col]] if split else []), *table[col]], dtype=float), 0, None)
        ax.barh(runs, v, left=left, color=color, label=name)
        left += v
    if not split:
        ax.barh(y[:1], [a], color="#55a868", label="A: replayed end to end")
    interval = comparison.intervals()
    err = np.vstack([table["end_to_end_s"] - interval["low_s"], interval["high_s"] - table["end_to_end_s"]])
    if np.any(np.nan_to_num(err) > 0):
        ax.errorbar(table["end_to_end_s"], y[1:], xerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=3)
    ax.axvline(comparison.measured_end_to_end_s, color="black", lw=0.8, ls="--", label="A: measured end to end")
    ends = np.fmax(table["end_to_end_s"].to_numpy(float), interval["high_s"].to_numpy(float))
    texts = [f"{fmt_seconds(a)} (measured {fmt_seconds(comparison.measured_end_to_end_s)})",
             *(f"{fmt_seconds(e2e)}, {SPEEDUP} {fmt_ratio(r)}" for e2e, r in zip(table["end_to_end_s"],
                                                                              table["speedup"], strict=True))]
    for yy, end, text in zip(y, [max(a, comparison.measured_end_to_end_s), *ends], texts, strict=True):
        ax.annotate(text, (end, yy), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8})
    ax.set_xlim(right=max(float(np.nanmax(ends)), comparison.measured_end_to_end_s, a) * 1.45)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"end to end: {metrics.end_to_end_start(metrics.notes_have_api(comparison.common_notes()))} to last "
                  "GPU op end (s)")
    ax.set_title(f"{Path(comparison.trace).name}: forecast on {plural(n - 1, 'target')}", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.5 / (1 + 0.3 * n)), ncol=2, frameon=False)
    return save(fig, path)
