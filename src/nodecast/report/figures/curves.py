"""Figure of projected effective bandwidth against transfer size (AHEAD Figs. 9-10 style).

One panel per transfer class; x is the copy size on a log2 axis, y the
bandwidth ``n / T(n)`` in GB/s (1 GB = 1e9 B). Colour tells the machine,
line style the model; measured curves from machine files are drawn as dots.
The subtitle says where each machine's 1-byte cost L+O came from.
``draw(curves, path, log_y=False, title=None)`` writes it (.png, .svg or
.pdf, 130 dpi).
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from nodecast.errors import InputError
from nodecast.fileio import atomic_path
from nodecast.models.curves import Curves
from nodecast.report.figures import draw, plt
from nodecast.traces.kinds import TransferClass

#: Figure formats by file suffix.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
#: Line style per model; models not listed cycle through the rest.
_STYLES = {"ahead": "-", "ahead-no-latency": (0, (5, 1, 1, 1)), "peak-bandwidth": "--", "back-of-envelope": ":"}
_SPARE_STYLES = ["-.", (0, (1, 3)), (0, (8, 2))]


def size_label(n: float) -> str:
    """``1 B``, ``64 KiB``, ``1 GiB``: binary units for powers of two."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{int(n // scale)} {unit}"
    return f"{int(n)} B"


def _style(model: str, models: list[str]) -> object:
    if model in _STYLES:
        return _STYLES[model]
    spare = [m for m in models if m not in _STYLES]
    return _SPARE_STYLES[spare.index(model) % len(_SPARE_STYLES)]


@draw.register(Curves)
def plot_curves(curves: Curves, path: str | Path, *, log_y: bool = False, title: str | None = None) -> Path:
    """Draw ``curves`` and write the figure to ``path`` (.png, .svg or .pdf) atomically."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"unknown figure format {path.suffix or '(none)'}", path=path,
                         hint=f"Name the file with one of {', '.join(FORMATS)}")
    classes = curves.classes
    ncols = min(3, len(classes))
    nrows = math.ceil(len(classes) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.4 * nrows + 1.0), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {m: colors[i % len(colors)] for i, m in enumerate(curves.machines)}
    table = curves.table
    sizes = curves.sizes
    lo, hi = float(sizes.min()), float(sizes.max())
    span = math.log2(hi / lo) if hi > lo else 0.0
    step = 10 if span > 20 else 4 if span > 8 else 2 if span > 4 else 1
    major = [2.0**e for e in range(0, 64, step) if lo <= 2.0**e <= hi] or [lo, hi]
    minor = [2.0**e for e in range(0, 64, 2 if step > 4 else 1) if lo <= 2.0**e <= hi]
    for ax, klass in zip(axes.flat, classes, strict=False):
        sub = table[table["transfer_class"] == klass.key]
        for machine in curves.machines:
            for model in curves.models:
                rows = sub[(sub["machine"] == machine) & (sub["model"] == model)].sort_values("bytes")
                if rows["bandwidth_bps"].notna().any():
                    ax.plot(rows["bytes"], rows["bandwidth_bps"] / 1e9, color=color[machine],
                            linestyle=_style(model, curves.models), linewidth=1.6)
            meas = curves.measured
            if len(meas):
                pts = meas[(meas["machine"] == machine) & (meas["transfer_class"] == klass.key)]
                if len(pts):
                    ax.plot(pts["bytes"], pts["bandwidth_bps"] / 1e9, "o", color=color[machine], markersize=3.5)
        ax.set_xscale("log", base=2)
        ax.set_xlim(lo, hi)
        ax.xaxis.set_major_locator(FixedLocator(major))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v)))
        ax.xaxis.set_minor_locator(FixedLocator(minor))
        ax.xaxis.set_minor_formatter(NullFormatter())
        if log_y:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_title(TransferClass(klass).label)
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", axis="x", alpha=0.12)
        ax.set_xlabel("bytes per copy")
        ax.set_ylabel("bandwidth, GB/s")
    for ax in list(axes.flat)[len(classes):]:
        ax.set_visible(False)

    handles = [Line2D([], [], color=color[m], linewidth=2.5, label=m) for m in curves.machines]
    handles += [Line2D([], [], color="0.25", linestyle=_style(m, curves.models), linewidth=1.6, label=m)
                for m in curves.models]
    if len(curves.measured):
        handles.append(Line2D([], [], color="0.25", marker="o", linestyle="", markersize=4,
                              label="measured (machine file)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 8), frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    heading = title or (
        f"Projected effective bandwidth vs copy size on {', '.join(curves.machines)} "
        f"(GB/s, 1 GB = 1e9 B; source {curves.source})"
    )
    height_in = fig.get_figheight()
    fig.suptitle(heading, fontsize=12, y=1 - 0.08 / height_in, va="top")
    subtitle = "1-byte cost L+O: " + "; ".join(curves.one_byte_summary())
    fig.text(0.5, 1 - 0.40 / height_in, subtitle, ha="center", va="top", fontsize=8, color="0.3", wrap=True)
    fig.tight_layout(rect=(0, 0.40 / height_in, 1, 1 - 0.62 / height_in))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=130)
    plt.close(fig)
    return path
