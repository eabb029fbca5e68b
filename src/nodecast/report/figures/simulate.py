"""``nodecast simulate``'s figures: a run's Gantt chart, GFlop/s against matrix size for sweeps and comparisons.

``draw(result, path)`` draws, by the result's type: a ``SimResult`` as a
Gantt chart (one row per worker, then one per copy direction; needs a run
with a trace), a ``SweepResult`` as GFlop/s against matrix size with one line
per scheduler (the paper's Figs. 5 and 7), a ``ReferenceComparison`` as the
same with StarPU+SimGrid's predictions as hollow markers. Figures are saved
at matplotlib's 100 dpi without a "Software" tag, so that the same result
gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodecast.fileio import atomic_path
from nodecast.report.figures import check_figure_path, draw, plt
from nodecast.runtime.outputs import SimResult
from nodecast.workflows.simulate_reference import ReferenceComparison
from nodecast.workflows.simulate_sweep import SweepResult


def _save(fig: Any, path: str | Path) -> Path:
    path = check_figure_path(path)
    with atomic_path(path) as tmp:
        png = path.suffix.lower() == ".png"
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), metadata={"Software": None} if png else None)
    plt.close(fig)
    return path


@draw.register(SimResult)
def gantt(result: SimResult, path: str | Path, *, transfers: bool = True) -> Path:
    """The schedule as a Gantt chart (one row per worker, then one per copy direction), kernels coloured."""
    if result.trace is None:
        msg = "this result has no trace (run with trace=True / --trace or --gantt)"
        raise ValueError(msg)
    rows = [w.name for w in result.workers]
    pairs = sorted({f"{t['src']}->{t['dst']}" for t in result.trace["transfers"]}) if transfers else []
    kernels = sorted({t["kernel"] for t in result.trace["tasks"]})
    cmap = plt.get_cmap("tab10")
    color = {k: cmap(i % 10) for i, k in enumerate(kernels)}
    fig, ax = plt.subplots(figsize=(12, 0.45 * (len(rows) + len(pairs)) + 1.5), dpi=100)
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for t in result.trace["tasks"]:
        spans.setdefault((t["worker"], t["kernel"]), []).append((t["start_s"], t["end_s"] - t["start_s"]))
    y = {name: i for i, name in enumerate(rows + pairs)}
    for (worker, kernel), xs in sorted(spans.items()):
        ax.broken_barh(xs, (y[worker] - 0.4, 0.8), facecolors=color[kernel], linewidth=0)
    xfer: dict[str, list[tuple[float, float]]] = {}
    for t in result.trace["transfers"]:
        xfer.setdefault(f"{t['src']}->{t['dst']}", []).append((t["start_s"], t["end_s"] - t["start_s"]))
    for pair in pairs:
        ax.broken_barh(xfer.get(pair, []), (y[pair] - 0.3, 0.6), facecolors="0.5", linewidth=0)
    ax.set_yticks(range(len(rows) + len(pairs)))
    ax.set_yticklabels(rows + pairs)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (s)")
    ax.set_xlim(0, result.makespan_s)
    ax.set_title(f"{result.app} on {result.platform}, {result.scheduler}: {result.makespan_s:.3f} s, {result.gflops:.1f} GFlop/s")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[k]) for k in kernels]
    ax.legend(handles, kernels, loc="upper right", fontsize=7, ncol=min(4, len(kernels)))
    fig.tight_layout()
    return _save(fig, path)


def gflops_against_size(
    rows: list[dict[str, Any]],
    path: str | Path,
    *,
    title: str,
    reference: list[dict[str, Any]] | None = None,
) -> Path:
    """GFlop/s against matrix size, one line per scheduler (the paper's Figs. 5 and 7).

    ``rows`` hold ``matrix_size``, ``scheduler``, ``gflops``; ``reference`` rows
    (same keys) are drawn as hollow markers, e.g. StarPU+SimGrid's predictions.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    scheds = list(dict.fromkeys(r["scheduler"] for r in rows))
    cmap = plt.get_cmap("tab10")
    for i, s in enumerate(scheds):
        pts = sorted((r["matrix_size"], r["gflops"]) for r in rows if r["scheduler"] == s)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color=cmap(i % 10), label=f"{s} (nodecast)", markersize=4)
        if reference:
            ref = sorted((r["matrix_size"], r["gflops"]) for r in reference if r["scheduler"] == s)
            if ref:
                ax.plot([p[0] for p in ref], [p[1] for p in ref], "--", marker="s", mfc="none", color=cmap(i % 10),
                        label=f"{s} (reference)", markersize=5)
    ax.set_xlabel("matrix size (elements per side)")
    ax.set_ylabel("GFlop/s (nominal flops / simulated time)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


@draw.register(SweepResult)
def _(result: SweepResult, path: str | Path) -> Path:
    return gflops_against_size(result.rows, path, title=result.title)


@draw.register(ReferenceComparison)
def _(result: ReferenceComparison, path: str | Path) -> Path:
    title, sel = result.first_group()
    ours = [{"matrix_size": r["matrix_size"], "scheduler": r["scheduler"], "gflops": r["nodecast_gflops"]} for r in sel]
    ref = [{"matrix_size": r["matrix_size"], "scheduler": r["scheduler"], "gflops": r["reference_gflops"]} for r in sel]
    return gflops_against_size(ours, path, title=f"{title}: nodecast vs StarPU+SimGrid", reference=ref)
