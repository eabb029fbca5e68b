"""Figure of projected effective bandwidth against transfer size (AHEAD Figs. 9-10 style).

One panel per transfer class; x is the copy size on a log2 axis, y the
bandwidth ``n / T(n)`` in GB/s (1 GB = 1e9 B). Colour tells the machine,
line style and marker the model; measured curves from machine files are
drawn as dots. The subtitle says where each machine's 1-byte cost L+O came
from. The bandwidth axis is logarithmic by default: a PCIe 2 node's 6 GB/s and a
GH200's 450 GB/s are both readable in one panel (``log_y=False``: linear
from 0, as AHEAD's figures). ``draw(curves, path, log_y=True, title=None)``
writes it (.png, .svg or .pdf, 130 dpi); ``curves_figure`` returns it.
"""

from __future__ import annotations

import math
from pathlib import Path

from nodecast.errors import InputError
from nodecast.fileio import atomic_path
from nodecast.models.curves import Curves
from nodecast.report.figures import draw
from nodecast.traces.kinds import TransferClass

#: Figure formats by file suffix.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
#: Line style and marker per model: no two alike, so that a model reads the same in every panel and two models
#: whose curves coincide (ahead and ahead-eq9 on pinned copies) still show both (their markers); models not listed
#: take the spare ones in turn.
_STYLES = {"ahead": ("-", "o"), "ahead-no-latency": ((0, (3, 1, 1, 1, 1, 1)), "v"), "ahead-eq9": ("-.", "s"),
           "peak-bandwidth": ("--", "^"), "back-of-envelope": (":", "D")}
_SPARE_STYLES = [((0, (8, 2)), "P"), ((0, (1, 1)), "X"), ((0, (5, 2, 1, 2)), "*"), ((0, (2, 4)), "h")]


def size_label(n: float) -> str:
    """``1 B``, ``64 KiB``, ``1 GiB``: binary units for powers of two."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{int(n // scale)} {unit}"
    return f"{int(n)} B"


def model_style(model: str, models: list[str]) -> tuple[object, str, int]:
    """``model``'s line style, marker and the index of the first point marked (its place in ``models``: the
    markers of coincident curves fall at different sizes)."""
    if model in _STYLES:
        linestyle, marker = _STYLES[model]
    else:
        spare = [m for m in models if m not in _STYLES]
        linestyle, marker = _SPARE_STYLES[spare.index(model) % len(_SPARE_STYLES)]
    return linestyle, marker, models.index(model)


@draw.register(Curves)
def plot_curves(curves: Curves, path: str | Path, *, log_y: bool = True, title: str | None = None) -> Path:
    """Draw ``curves`` (``curves_figure``) and write the figure to ``path`` (.png, .svg or .pdf) atomically."""
    from nodecast.report.figures import plt

    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"unknown figure format {path.suffix or '(none)'}", path=path,
                         hint=f"Name the file with one of {', '.join(FORMATS)}")
    fig = curves_figure(curves, log_y=log_y, title=title)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=130)
    finally:
        plt.close(fig)
    return path


def _gbps_tick(value: float, _pos: object = None) -> str:
    """A bandwidth tick in GB/s as a plain number (``0.001``, ``10``, ``1,000``), never ``10^-3``."""
    from nodecast.report.tables import significant

    return significant(value) if value > 0 else "0"


def curves_figure(curves: Curves, *, log_y: bool = True, title: str | None = None):  # noqa: ANN201 (Figure)
    """The matplotlib Figure of ``curves``: one panel per transfer class, a colour per machine, a line style and
    a marker per model (``model_style``), the bandwidth axis logarithmic unless ``log_y`` is False (linear from
    0, as AHEAD's figures). The caller saves and closes it."""
    # NOTE: matplotlib here, not at module level: the terminal table imports size_label without the figures extra.
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    from nodecast.report.figures import plt

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
    every = max(1, len(sizes) // 8)  # about 8 markers per curve, each model's at other sizes than the next one's
    styles = {m: model_style(m, curves.models) for m in curves.models}
    for ax, klass in zip(axes.flat, classes, strict=False):
        sub = table[table["transfer_class"] == klass.key]
        for machine in curves.machines:
            for model in curves.models:
                rows = sub[(sub["machine"] == machine) & (sub["model"] == model)].sort_values("bytes")
                if rows["bandwidth_bps"].notna().any():
                    linestyle, marker, start = styles[model]
                    ax.plot(rows["bytes"], rows["bandwidth_bps"] / 1e9, color=color[machine], linestyle=linestyle,
                            linewidth=1.6, marker=marker, markersize=4.5, markevery=(start % every, every),
                            markerfacecolor="white", gid=f"{machine}/{model}")
            meas = curves.measured
            if len(meas):
                pts = meas[(meas["machine"] == machine) & (meas["transfer_class"] == klass.key)]
                if len(pts):
                    ax.plot(pts["bytes"], pts["bandwidth_bps"] / 1e9, "o", color=color[machine], markersize=3.5,
                            gid=f"{machine}/measured")
        ax.set_xscale("log", base=2)
        ax.set_xlim(lo, hi)
        ax.xaxis.set_major_locator(FixedLocator(major))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v)))
        ax.xaxis.set_minor_locator(FixedLocator(minor))
        ax.xaxis.set_minor_formatter(NullFormatter())
        if log_y:  # 1 B copies at ~0.001 GB/s to GH200's 4,000: a slow link's curve is as readable as a fast one's
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
            ax.yaxis.set_major_formatter(FuncFormatter(_gbps_tick))
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_ylim(bottom=0)
        ax.set_title(TransferClass(klass).label)
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", axis="x", alpha=0.12)
        ax.set_xlabel("bytes per copy")
        ax.set_ylabel("bandwidth, GB/s" + (" (log scale)" if log_y else ""))
    for ax in list(axes.flat)[len(classes):]:
        ax.set_visible(False)

    handles = [Line2D([], [], color=color[m], linewidth=2.5, label=m) for m in curves.machines]
    handles += [Line2D([], [], color="0.25", linestyle=styles[m][0], marker=styles[m][1], markerfacecolor="white",
                       linewidth=1.6, label=m) for m in curves.models]
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
    return fig
