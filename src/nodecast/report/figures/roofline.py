"""``nodecast roofline``'s figure: one kernel's hierarchical roofline on the source and the target GPU.

As Fig. 2 of Van Lanker et al. (Euro-Par 2024): the GPU's maxima (compute
roof and the L1, L2, DRAM bandwidth lines), the kernel-specific ceilings
(eq. 3 compute ceiling, eqs. 6-8 bandwidth ceilings, dashed), the kernel at
its three operational intensities (eq. 10) and, on the target, the projected
performance interval of eq. 9 (blue area, red line at its midpoint).
``draw(KernelRoofline, path)`` writes it as PNG, SVG or PDF (150 dpi).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nodecast.fileio import atomic_path
from nodecast.workflows.kernels import KernelRoofline
from nodecast.report.figures import check_figure_path, draw, plt

if TYPE_CHECKING:
    from nodecast.models.roofline_equations import RooflineProjection
    from nodecast.models.roofline_figures import GpuFigures

_LEVEL_STYLE = {"l1": ("L1", "tab:green"), "l2": ("L2", "tab:purple"), "dram": ("DRAM", "tab:brown")}


@draw.register(KernelRoofline)
def _(result: KernelRoofline, path: str | Path) -> Path:
    path = check_figure_path(path)
    fig = draw_projection(result.projection, result.kernel, result.what)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lower().lstrip("."), dpi=150)
    plt.close(fig)
    return path


def _dominant_precision(proj: RooflineProjection) -> str:
    from nodecast.models.roofline_figures import MODEL_PRECISIONS

    inst = proj.inputs.inst
    flop = {p: float(2 * inst[(p, "fma")][0] + inst[(p, "add")][0] + inst[(p, "mul")][0]) for p in MODEL_PRECISIONS}
    return max(flop, key=flop.get)  # type: ignore[arg-type]


def draw_projection(proj: RooflineProjection, kernel: str, what: str):  # noqa: ANN201 (matplotlib Figure)
    """A two-panel figure (source, target) of one launch's roofline projection (row 0 of ``proj``)."""
    from nodecast.cost.kernels import short_kernel_name
    from nodecast.models.roofline_equations import PROJECTION_LEVELS

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
