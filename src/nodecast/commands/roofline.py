"""``nodecast roofline METRICS.csv --from A --to B --kernel NAME -o fig.png``: draw a kernel's projection.

Draws the hierarchical roofline of one kernel on the source and on the target
GPU, as in Fig. 2 of Van Lanker et al. (Euro-Par 2024): the GPU's maxima
(compute roof and the L1, L2, DRAM bandwidth lines), the kernel-specific
ceilings (eq. 3 compute ceiling, eqs. 6-8 bandwidth ceilings, dashed), the
kernel at its three operational intensities (eq. 10) and, on the target, the
projected performance interval of eq. 9 (blue area, red line at its midpoint).
All launches of the kernel are drawn as one point (counts and times summed)
unless ``--launch`` picks one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nodecast.errors import InputError

if TYPE_CHECKING:
    from nodecast.models.roofline import GpuFigures, RooflineProjection

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
_LEVEL_STYLE = {"l1": ("L1", "tab:green"), "l2": ("L2", "tab:purple"), "dram": ("DRAM", "tab:brown")}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roofline", help="draw a kernel's hierarchical roofline on source and target GPUs",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics", nargs="+", metavar="METRICS.csv", help="ncu CSV export(s) of one run")
    p.add_argument("--from", dest="source", required=True, metavar="MACHINE", help="profiled node")
    p.add_argument("--to", dest="target", required=True, metavar="MACHINE", help="node to project onto")
    p.add_argument("--kernel", required=True, metavar="NAME",
                   help="kernel name, or a part of it that matches one kernel only")
    p.add_argument("--launch", type=int, default=None, metavar="K",
                   help="draw the K-th launch (0-based) instead of all launches summed")
    p.add_argument("-o", "--output", required=True, metavar="FIG", help="figure file (.png, .svg or .pdf)")
    p.set_defaults(func=run)


def select_kernel(names: list[str], pattern: str) -> str:
    """The one kernel name equal to ``pattern``, else the one containing it; InputError otherwise."""
    if pattern in names:
        return pattern
    hits = [n for n in names if pattern in n]
    if len(hits) == 1:
        return hits[0]
    from nodecast.models.roofline import short_kernel_name

    if not hits:
        known = "; ".join(short_kernel_name(n, 50) for n in names[:6])
        raise InputError(f"no kernel name contains {pattern!r}", key="--kernel", hint=f"Kernels: {known}")
    shown = "; ".join(short_kernel_name(n, 50) for n in hits[:4])
    raise InputError(f"{len(hits)} kernels contain {pattern!r}", key="--kernel",
                     hint=f"Give a longer part of the name: {shown}")


def run(args: argparse.Namespace) -> int:
    from nodecast.fileio import atomic_path, check_writable
    from nodecast.machines import load_machine
    from nodecast.models.roofline import (
        KernelInputs,
        aggregate_launches,
        gpu_figures,
        project_kernels,
    )
    from nodecast.traces.ncu import read_ncu_csv

    out = Path(args.output)
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError(f"cannot draw a figure as {out.suffix or 'a file without extension'}", path=out,
                         hint=f"Use one of {', '.join(FIGURE_SUFFIXES)}")
    check_writable(out, "-o")
    source, target = load_machine(args.source), load_machine(args.target)
    metrics = read_ncu_csv(args.metrics)
    name = select_kernel(metrics.kernel_names, args.kernel)
    rows = np.flatnonzero(metrics.table["kernel"].to_numpy() == name)
    if args.launch is not None:
        if not 0 <= args.launch < len(rows):
            raise InputError(f"kernel has {len(rows)} launches (0..{len(rows) - 1})", key="--launch")
        one = metrics.take([rows[args.launch]])
        what = f"launch {args.launch}"
    else:
        one = aggregate_launches(metrics, rows)
        what = f"{len(rows)} launches summed" if len(rows) > 1 else "1 launch"
    inp = KernelInputs.from_metrics(one)
    if not inp.flop()[0] > 0:
        raise InputError("the kernel executes no floating-point instruction (FLOP = 0): it has no "
                         "operational intensity to draw", key="--kernel",
                         hint="Choose a kernel with FP work; `nodecast kernels` still projects this one")
    src, tgt = gpu_figures(source), gpu_figures(target, reference=source)
    proj = project_kernels(inp, src, tgt)
    fig = draw_projection(proj, name, what)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format=out.suffix.lower().lstrip("."), dpi=150)
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(f"wrote {out}")
    return 0


def _dominant_precision(proj: RooflineProjection) -> str:
    from nodecast.models.roofline import MODEL_PRECISIONS

    inst = proj.inputs.inst
    flop = {p: float(2 * inst[(p, "fma")][0] + inst[(p, "add")][0] + inst[(p, "mul")][0]) for p in MODEL_PRECISIONS}
    return max(flop, key=flop.get)  # type: ignore[arg-type]


def draw_projection(proj: RooflineProjection, kernel: str, what: str):  # noqa: ANN201 (matplotlib Figure)
    """A two-panel figure (source, target) of one launch's roofline projection (row 0 of ``proj``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nodecast.models.roofline import PROJECTION_LEVELS, short_kernel_name

    prec = _dominant_precision(proj)
    oi = {lv: float(proj.oi_s[lv][0]) for lv in PROJECTION_LEVELS}
    oi_t = {lv: float(proj.oi_t[lv][0]) for lv in PROJECTION_LEVELS}
    perf_t = {lv: float(v[0]) for lv, v in proj.perf_level().items()}
    finite = [v for v in [*oi.values(), *oi_t.values()] if np.isfinite(v) and v > 0]
    lo_x = 10 ** (np.floor(np.log10(min(finite))) - 1)
    hi_x = 10 ** (np.ceil(np.log10(max(finite))) + 2)
    x = np.logspace(np.log10(lo_x), np.log10(hi_x), 400)
    fig, axes = plt.subplots(1, 2, figsize=(13, 7.2), sharey=True)
    panels = [(axes[0], proj.source, proj.ceil_s, f"(a) On source GPU {proj.source.model} ({proj.source.machine})"),
              (axes[1], proj.target, proj.ceil_t,
               f"(b) On target GPU {proj.target.model} ({proj.target.machine}) with its projection (blue area)")]
    ymax = 0.0
    for ax, figs, ceil, title in panels:
        ymax = max(ymax, _draw_gpu(ax, x, figs, ceil, prec))
        ax.set_title(title, fontsize=10)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("operational intensity (FLOP/byte)")
        ax.grid(True, which="major", alpha=0.3)
        ax.set_xlim(lo_x, hi_x)
    axes[0].set_ylabel("performance (FLOP/s)")
    ax_s, ax_t = axes
    perf_s = float(proj.perf_s[0])
    for lv in PROJECTION_LEVELS:
        label, color = _LEVEL_STYLE[lv]
        if np.isfinite(oi[lv]):
            ax_s.plot([oi[lv]], [perf_s], "o", color=color, markersize=8, markeredgecolor="black",
                      label=f"kernel at OI_{label} = {oi[lv]:.3g}", zorder=5)
        if np.isfinite(oi_t[lv]) and np.isfinite(perf_t[lv]):
            ax_t.plot([oi_t[lv]], [perf_t[lv]], "o", color=color, markersize=8, markeredgecolor="black",
                      label=f"Perf_t({label}) = {perf_t[lv] / 1e9:,.4g} GFLOP/s", zorder=5)
    ax_s.annotate(f"measured {perf_s / 1e9:,.4g} GFLOP/s", (min(v for v in oi.values() if np.isfinite(v)), perf_s),
                  textcoords="offset points", xytext=(-10, 12), ha="right", fontsize=8)
    vals = [v for v in perf_t.values() if np.isfinite(v)]
    if vals:
        p_lo, p_hi = min(vals), max(vals)
        ox = [v for v in oi_t.values() if np.isfinite(v)]
        span = (min(ox) / 3, max(ox) * 3)
        ax_t.fill_between(span, [p_lo, p_lo], [p_hi if p_hi > p_lo else p_lo * 1.02] * 2, color="tab:blue",
                          alpha=0.3, label="projected interval (eq. 9)", zorder=3)
        mid = (p_lo + p_hi) / 2
        ax_t.plot(span, [mid, mid], color="red", linewidth=2, zorder=4,
                  label=f"mean {mid / 1e9:,.4g} GFLOP/s -> {proj.time_s[0] * 1e6:,.4g} µs")
    ymin = min([perf_s, *vals]) / 30 if vals else perf_s / 30
    for ax in axes:
        ax.set_ylim(ymin, ymax * 3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    fig.suptitle(f"{short_kernel_name(kernel, 90)} — {what}; source {proj.inputs.time_s[0] * 1e6:,.4g} µs, "
                 f"projected {proj.low_s[0] * 1e6:,.4g}–{proj.high_s[0] * 1e6:,.4g} µs", fontsize=10)
    fig.tight_layout()
    return fig


def _draw_gpu(ax, x: np.ndarray, figs: GpuFigures, ceil, prec: str) -> float:  # noqa: ANN001
    """GPU roofs (solid) and the kernel's ceilings (dashed) on one panel; returns the top roof."""
    peak = figs.fma.get(prec, max(figs.fma.values()) if figs.fma else np.nan)
    ax.plot(x, np.full_like(x, peak), color="black", linewidth=1.5,
            label=f"Perf^max {prec.upper()} FMA {peak / 1e12:.3g} TFLOP/s")
    for lv in ("l1", "l2", "dram"):
        label, color = _LEVEL_STYLE[lv]
        bw = figs.bandwidth.get(lv)
        if bw:
            ax.plot(x, np.minimum(bw * x, peak), color=color, linewidth=1.2,
                    label=f"BW^max {label} {bw / 1e9:,.0f} GB/s")
        bc = float(ceil.bw_ceil[lv][0])
        if np.isfinite(bc):
            pc = float(ceil.perf_ceil[0])
            ax.plot(x, np.minimum(bc * x, pc), color=color, linewidth=1.2, linestyle="--",
                    label=f"BW^ceil {label} {bc / 1e9:,.0f} GB/s")
    pc = float(ceil.perf_ceil[0])
    if np.isfinite(pc):
        ax.plot(x, np.full_like(x, pc), color="gold", linewidth=2, linestyle="--",
                label=f"Perf^ceil {pc / 1e12:.3g} TFLOP/s (eqs. 2-3)")
    return float(peak)
