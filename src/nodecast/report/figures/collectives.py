"""``nodecast collectives --png``: bus bandwidth against message size, one line per node (nccl-tests' busbw).

x: message size (nccl-tests' size) on a log2 axis; y: busbw in GB/s (1 GB = 1e9 B). A marker's shape tells the
algorithm and protocol NCCL's model chose at that size, so the switch from LL to Simple (or to NVLS) shows.
"""

from __future__ import annotations

from pathlib import Path

from nodecast.report.figures import draw, plt, save
from nodecast.report.figures.curves import size_label
from nodecast.workflows.collectives import CollectivesResult

#: Marker per protocol (the algorithm is in the legend's text).
_MARKERS = {"ll": "o", "ll128": "s", "simple": "^"}


@draw.register(CollectivesResult)
def busbw_figure(result: CollectivesResult, path: str | Path, **_: object) -> Path:
    """Draw busbw against size per node and write it to ``path`` (.png, .svg or .pdf)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    table = result.table
    for i, name in enumerate(result.names):
        rows = table[table["machine"] == name]
        color = colors[i % len(colors)]
        ax.plot(rows["size_bytes"], rows["busbw_bps"] / 1e9, color=color, linewidth=1.6,
                label=f"{name} ({rows['gpus'].iloc[0]} GPUs)")
        for (algo, proto), part in rows.groupby(["algorithm", "protocol"], sort=False):
            ax.plot(part["size_bytes"], part["busbw_bps"] / 1e9, linestyle="", marker=_MARKERS.get(proto, "x"),
                    markersize=4.5, color=color, markerfacecolor="white" if algo != "nvls" else color)
    sizes = table["size_bytes"]
    lo, hi = float(sizes.min()), float(sizes.max())
    ax.set_xscale("log", base=2)
    if hi > lo:
        ax.set_xlim(lo, hi)
    step = max(1, round((hi / lo) ** 0.1).bit_length() if hi > lo else 1)
    ticks = [2.0**e for e in range(0, 64, step) if lo <= 2.0**e <= hi] or [lo]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(bottom=0)
    ax.set_xlabel("message size (nccl-tests' size)")
    ax.set_ylabel("busbw, GB/s (1 GB = 1e9 B)")
    ax.grid(True, alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3", linestyle="", marker=m, markerfacecolor="white", label=p)
                for p, m in _MARKERS.items()]
    handles.append(Line2D([], [], color="0.3", linestyle="", marker="^", label="filled: NVLS"))
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    ax.set_title(f"{result.op.key}, {result.dtype.key}: busbw per message size (NCCL's model)", fontsize=11)
    return save(fig, path)
