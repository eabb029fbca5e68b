"""Interactive figures of the HTML report (Bokeh), each a function over plain data.

``critical_path`` (stacked bars), ``bars`` (per kind / per kernel),
``error_boxes`` (box plots, whiskers at 1.5 IQR as AHEAD Fig. 11),
``bandwidth_curves`` (log2 x), ``roofline`` (log-log with ceilings) and
``sweep`` (lines over a size or count). Inputs are pandas DataFrames,
mappings and arrays in SI units (seconds, bytes, bytes/s, flop/s); axes and
tooltips print every number with its unit, with the terminal's formatters'
rules (``units.FORMAT_JS`` in the browser). Timelines and Gantt charts are
in ``timeline``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from nodecast.report.html.colors import category_colors
from nodecast.report.html.page import Figure
from nodecast.report.html.units import check_unit, fmt

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")

#: unit -> (factor applied to plotted values, unit text after them, browser formatter of a plotted value).
_AXES = {
    "s": (1.0, "", "ncFmtSeconds(v)"),
    "B": (1.0, "", "ncFmtBytes(v)"),
    "B/s": (1e-9, "GB/s", 'ncSignificant(v) + " GB/s"'),
    "flop/s": (1e-9, "GFlop/s", 'ncSignificant(v) + " GFlop/s"'),
    "flop/B": (1.0, "flop/B", 'ncSignificant(v) + " flop/B"'),
    "%": (1.0, "%", 'ncSignificant(v) + " %"'),
    "share": (100.0, "%", 'ncSignificant(v) + " %"'),
    "count": (1.0, "", 'Math.round(v).toLocaleString("en-US")'),
    "x": (1.0, "×", 'ncSignificant(v) + "×"'),
    "": (1.0, "", "ncSignificant(v, 4)"),
}


def _color(i: int) -> str:
    return _PALETTE[i % len(_PALETTE)]


def _scale(unit: str) -> float:
    return _AXES[check_unit(unit)][0]


def axis_label(what: str, unit: str) -> str:
    """``what`` with the unit of its plotted values in brackets when the ticks do not print it."""
    text = _AXES[check_unit(unit)][1]
    return f"{what} ({text})" if text else what


def _tick_formatter(unit: str, log: bool = False):  # noqa: ANN202
    """Tick labels with the unit; on linear time and byte axes with the decimals the tick spacing needs."""
    from bokeh.models import CustomJSTickFormatter

    if unit in ("s", "B") and not log:
        fn = "ncFmtSecondsTick" if unit == "s" else "ncFmtBytesTick"
        return CustomJSTickFormatter(code=f"return {fn}(tick, ticks);")
    return CustomJSTickFormatter(code=f"const v = tick; return {_AXES[unit][2]};")


def _hover(unit: str):  # noqa: ANN202
    from bokeh.models import CustomJSHover

    return CustomJSHover(code=f"const v = value; return {_AXES[unit][2]};")


def seconds_axis(axis, label: str) -> None:  # noqa: ANN001
    """Ticks of ``axis`` read as times with their unit (``1.5 ms``)."""
    axis.formatter = _tick_formatter("s")
    axis.axis_label = label


def _unit_axis(axis, what: str, unit: str, log: bool = False) -> None:  # noqa: ANN001
    if unit in ("s", "B", "count"):
        axis.formatter = _tick_formatter(unit, log)
    axis.axis_label = axis_label(what, unit)


def _figure(height: int, **kw):  # noqa: ANN003, ANN202
    from bokeh.plotting import figure

    kw.setdefault("tools", "pan,wheel_zoom,box_zoom,reset,save")
    return figure(height=height, sizing_mode="stretch_width", toolbar_location="above", **kw)


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def critical_path(breakdown: pd.DataFrame, title: str = "Critical-path breakdown", anchor: str = "critical-path") -> Figure:
    """Stacked horizontal bars: one per timeline (index), one segment per category (columns), in seconds."""
    from bokeh.models import ColumnDataSource, HoverTool, LabelSet

    if breakdown.empty:
        raise ValueError("critical_path: the breakdown has no rows")
    runs = [str(i) for i in breakdown.index]
    cats = [str(c) for c in breakdown.columns]
    values = breakdown.to_numpy(np.float64)
    data: dict[str, object] = {"run": runs}
    for j, c in enumerate(cats):
        data[c] = values[:, j]
    totals = np.nansum(values, axis=1)
    data["total"] = totals
    data["total_text"] = ["  " + fmt(t, "s") for t in totals]
    source = ColumnDataSource(data, name=f"{anchor}:bars")
    fig = _figure(130 + 50 * len(runs), y_range=list(reversed(runs)), x_range=(0, float(totals.max()) * 1.18 or 1.0))
    renderers = fig.hbar_stack(cats, y="run", height=0.6, color=category_colors(cats),
                               source=source, legend_label=cats, line_color="white")
    for r, c in zip(renderers, cats, strict=True):
        fig.add_tools(HoverTool(renderers=[r], tooltips=[("run", "@run"), ("category", c),
                                                         ("time", f"@{{{c}}}{{custom}}"), ("total", "@total{custom}")],
                                formatters={f"@{{{c}}}": _hover("s"), "@total": _hover("s")}))
    fig.add_layout(LabelSet(x="total", y="run", text="total_text", source=source, text_baseline="middle",
                            text_font_size="12px"))
    seconds_axis(fig.xaxis[0], "time on the critical path")
    fig.legend.orientation = "horizontal"
    fig.legend.location = "top_left"
    fig.add_layout(fig.legend[0], "above")
    fig.ygrid.grid_line_color = None
    caption = '<p class="caption">Time on the critical path by category; the number after each bar is its total.</p>'
    return Figure(title=title, model=fig, caption=caption, anchor=anchor)


def bars(
    df: pd.DataFrame,
    category: str,
    values: Sequence[str],
    unit: str,
    title: str,
    what: str = "",
    anchor: str = "bars",
) -> Figure:
    """Horizontal bars per ``category`` row, one bar per column of ``values`` (e.g. machine A and B), in ``unit``.

    For per-kind and per-kernel projections: ``df`` has one row per kind or
    kernel; rows are drawn in the order given (sort before).
    """
    from bokeh.models import ColumnDataSource, HoverTool, LabelSet
    from bokeh.transform import dodge

    check_unit(unit)
    if df.empty:
        raise ValueError(f"bars {title!r}: no rows")
    full = [str(c) for c in df[category]]
    shown = [_short(c) for c in full]
    if len(set(shown)) < len(shown):  # names cut alike: number them so that each row keeps its own bar
        shown = [f"{i + 1}. {s}" for i, s in enumerate(shown)]
    k = len(values)
    step = 0.8 / k
    top = max(float(np.nanmax(df[c].to_numpy(np.float64), initial=0.0)) for c in values) * _scale(unit)
    fig = _figure(140 + (10 + 14 * k) * len(full), y_range=list(reversed(shown)), x_range=(0, top * 1.15 or 1.0))
    for j, col in enumerate(values):
        v = df[col].to_numpy(np.float64)
        source = ColumnDataSource({"cat": shown, "name": full, "value": v * _scale(unit),
                                   "text": [fmt(x, unit) for x in v]}, name=f"{anchor}:{col}")
        y = dodge("cat", (k - 1) / 2 * step - j * step, range=fig.y_range)
        r = fig.hbar(y=y, right="value", left=0, height=step * 0.9, color=_color(j), source=source,
                     legend_label=str(col))
        fig.add_layout(LabelSet(x="value", y=y, text="text", source=source, x_offset=4, text_baseline="middle",
                                text_font_size="11px", text_color="#444"))
        fig.add_tools(HoverTool(renderers=[r], tooltips=[(category, "@name"), (str(col), "@text")]))
    _unit_axis(fig.xaxis[0], what or "value", unit)
    fig.legend.orientation = "horizontal"
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    fig.add_layout(fig.legend[0], "above")
    fig.ygrid.grid_line_color = None
    return Figure(title=title, model=fig, anchor=anchor)


def box_stats(values: object) -> dict[str, float]:
    """n, quartiles, median, mean and whiskers (the furthest data within 1.5 IQR of the box) of ``values``, NaN dropped."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {k: math.nan for k in ("q1", "median", "q3", "low", "high", "mean")} | {"n": 0.0}
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    iqr = q3 - q1
    low = float(v[v >= q1 - 1.5 * iqr].min())
    high = float(v[v <= q3 + 1.5 * iqr].max())
    return {"n": float(v.size), "q1": float(q1), "median": float(med), "q3": float(q3), "low": low, "high": high,
            "mean": float(v.mean())}


def error_boxes(
    errors: Mapping[str, object],
    unit: str = "%",
    title: str = "Error distribution",
    what: str = "per-op |forecast - measured| / measured",
    anchor: str = "errors",
) -> Figure:
    """One box per entry of ``errors`` (name -> per-op errors in ``unit``): box Q1-Q3, median line, whiskers 1.5 IQR.

    Outliers are not drawn (as in AHEAD Fig. 11); the tooltip gives n, the
    quartiles, the whiskers and the mean.
    """
    from bokeh.models import ColumnDataSource, HoverTool

    check_unit(unit)
    names = [str(k) for k in errors]
    if not names:
        raise ValueError("error_boxes: no series")
    stats = [box_stats(errors[k]) for k in errors]
    s = _scale(unit)
    data: dict[str, object] = {"name": names}
    for key in ("q1", "median", "q3", "low", "high", "mean"):
        data[key] = [st[key] * s for st in stats]
        data[key + "_text"] = [fmt(st[key], unit) for st in stats]
    data["n"] = [int(st["n"]) for st in stats]
    data["color"] = [_color(i) for i in range(len(names))]
    source = ColumnDataSource(data, name=f"{anchor}:boxes")
    fig = _figure(380, x_range=names)
    fig.segment(x0="name", y0="low", x1="name", y1="high", source=source, line_color="#444")
    for end in ("low", "high"):
        fig.scatter(x="name", y=end, marker="dash", size=22, source=source, line_color="#444", line_width=1.5)
    box = fig.vbar(x="name", bottom="q1", top="q3", width=0.55, source=source, fill_color="color", fill_alpha=0.55,
                   line_color="#333")
    fig.scatter(x="name", y="median", marker="dash", size=46, source=source, line_color="black", line_width=2.5)
    fig.add_tools(HoverTool(renderers=[box], tooltips=[
        ("", "@name"), ("ops", "@n{0,0}"), ("median", "@median_text"), ("Q1 – Q3", "@q1_text – @q3_text"),
        ("whiskers", "@low_text – @high_text"), ("mean", "@mean_text"),
    ]))
    _unit_axis(fig.yaxis[0], what, unit)
    fig.xgrid.grid_line_color = None
    lows = [d for d in data["low"] if not math.isnan(d)]  # type: ignore[union-attr]
    if lows and min(lows) >= 0:
        fig.y_range.start = 0
    caption = '<p class="caption">Boxes: Q1 to Q3 with the median; whiskers: the furthest errors within 1.5 IQR; ' \
              "outliers not drawn.</p>"
    return Figure(title=title, model=fig, caption=caption, anchor=anchor)


def _bytes_log_axis(fig) -> None:  # noqa: ANN001
    from bokeh.models import LogTicker

    fig.xaxis.ticker = LogTicker(base=2, mantissas=[1], desired_num_ticks=12)
    fig.xaxis.formatter = _tick_formatter("B", log=True)


def bandwidth_curves(
    curves: pd.DataFrame,
    measured: pd.DataFrame | None = None,
    title: str = "Effective bandwidth against copy size",
    log_y: bool = False,
    anchor: str = "bandwidth",
) -> Figure:
    """Lines of bandwidth against copy size, one per ``series``; log2 x axis in bytes, y in GB/s.

    ``curves`` and ``measured`` (dots): columns ``series``, ``bytes``,
    ``bandwidth_bps`` (bytes/s).
    """
    from bokeh.models import ColumnDataSource, HoverTool

    sizes = curves["bytes"].to_numpy(np.float64)
    fig = _figure(420, x_axis_type="log", y_axis_type="log" if log_y else "linear",
                  x_range=(float(sizes.min()), float(sizes.max())))
    series = list(dict.fromkeys(str(s) for s in curves["series"]))
    for i, name in enumerate(series):
        rows = curves[curves["series"].astype(str) == name].sort_values("bytes")
        source = ColumnDataSource({"bytes": rows["bytes"].to_numpy(np.float64),
                                   "gbps": rows["bandwidth_bps"].to_numpy(np.float64) * 1e-9,
                                   "series": [name] * len(rows)}, name=f"{anchor}:{name}")
        line = fig.line("bytes", "gbps", source=source, line_width=2, color=_color(i), legend_label=name)
        fig.add_tools(HoverTool(renderers=[line], mode="vline", tooltips=[
            ("", "@series"), ("size", "@bytes{custom}"), ("bandwidth", "@gbps{custom}")],
            formatters={"@bytes": _hover("B"), "@gbps": _hover("B/s")}))
    if measured is not None and len(measured):
        for i, name in enumerate(dict.fromkeys(str(s) for s in measured["series"])):
            rows = measured[measured["series"].astype(str) == name]
            color = _color(series.index(name)) if name in series else _color(len(series) + i)
            fig.scatter(rows["bytes"].to_numpy(np.float64), rows["bandwidth_bps"].to_numpy(np.float64) * 1e-9,
                        size=6, color=color, legend_label=f"{name} (measured)")
    _bytes_log_axis(fig)
    fig.xaxis.axis_label = "bytes per copy"
    fig.yaxis.axis_label = "bandwidth (GB/s, 1 GB = 1e9 B)"
    if not log_y:
        fig.y_range.start = 0
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    return Figure(title=title, model=fig, anchor=anchor)


def roofline(
    points: pd.DataFrame,
    compute: Mapping[str, float],
    memory: Mapping[str, float],
    title: str = "Roofline",
    anchor: str = "roofline",
) -> Figure:
    """Kernels on a log-log roofline under the machine's ceilings.

    ``points``: columns ``name``, ``flop_per_byte`` (arithmetic intensity)
    and ``flop_per_s``; ``compute``: ceiling name -> peak flop/s;
    ``memory``: ceiling name -> bandwidth in bytes/s. A memory ceiling is
    ``b * I`` up to the highest compute peak, a compute ceiling is flat from
    where the highest bandwidth reaches it (Williams et al., 2009).
    """
    from bokeh.models import ColumnDataSource, HoverTool, Label

    if not compute or not memory:
        raise ValueError("roofline: needs at least one compute and one memory ceiling")
    intensity = points["flop_per_byte"].to_numpy(np.float64)
    peak, bw = max(compute.values()), max(memory.values())
    ridges = [peak / b for b in memory.values()] + [p / bw for p in compute.values()]
    finite = intensity[np.isfinite(intensity) & (intensity > 0)]
    lo = min([*finite, *ridges]) / 4
    hi = max([*finite, *ridges]) * 4
    fig = _figure(460, x_axis_type="log", y_axis_type="log", x_range=(lo, hi))
    for name, b in memory.items():
        x = np.array([lo, peak / b])
        fig.line(x, b * x * 1e-9, line_width=2, color="#555", line_dash="dashed")
        mid = math.sqrt(lo * peak / b)  # halfway along the slope (log scale), text ending there, above the line
        fig.add_layout(Label(x=mid, y=b * mid * 1e-9, text=f"{name}: {fmt(b, 'B/s')}", text_align="right",
                             x_offset=-4, y_offset=4, text_font_size="11px", text_color="#444"))
    for name, p in compute.items():
        fig.line([p / bw, hi], [p * 1e-9, p * 1e-9], line_width=2, color="#555")
        fig.add_layout(Label(x=hi, y=p * 1e-9, text=f"{name}: {fmt(p, 'flop/s')}", text_align="right",
                             y_offset=4, text_font_size="11px", text_color="#444"))
    source = ColumnDataSource({
        "name": [str(n) for n in points["name"]], "intensity": intensity,
        "gflops": points["flop_per_s"].to_numpy(np.float64) * 1e-9,
        "rate_text": [fmt(v, "flop/s") for v in points["flop_per_s"]],
        "intensity_text": [fmt(v, "flop/B") for v in intensity],
    }, name=f"{anchor}:points")
    dots = fig.scatter("intensity", "gflops", source=source, size=8, color=_color(0), alpha=0.8)
    fig.add_tools(HoverTool(renderers=[dots], tooltips=[("kernel", "@name"), ("intensity", "@intensity_text"),
                                                        ("rate", "@rate_text")]))
    fig.xaxis.axis_label = "arithmetic intensity (flop/B)"
    fig.yaxis.axis_label = "compute rate (GFlop/s)"
    caption = '<p class="caption">Dashed: memory ceilings (bandwidth × intensity); solid: compute ceilings.</p>'
    return Figure(title=title, model=fig, caption=caption, anchor=anchor)


def sweep(
    df: pd.DataFrame,
    x: str,
    y: str,
    series: str | None = None,
    x_unit: str = "",
    y_unit: str = "",
    title: str = "Size sweep",
    log_x: bool = False,
    log_y: bool = False,
    anchor: str = "sweep",
) -> Figure:
    """Lines of ``y`` against ``x``, one per value of ``series`` (e.g. makespan against matrix size per scheduler)."""
    from bokeh.models import ColumnDataSource, HoverTool

    check_unit(x_unit)
    check_unit(y_unit)
    fig = _figure(420, x_axis_type="log" if log_x else "linear", y_axis_type="log" if log_y else "linear")
    groups = [("", df)] if series is None else [(str(k), g) for k, g in df.groupby(series, sort=False)]
    for i, (name, rows) in enumerate(groups):
        rows = rows.sort_values(x)
        source = ColumnDataSource({
            "x": rows[x].to_numpy(np.float64) * _scale(x_unit), "y": rows[y].to_numpy(np.float64) * _scale(y_unit),
            "x_text": [fmt(v, x_unit) for v in rows[x]], "y_text": [fmt(v, y_unit) for v in rows[y]],
            "series": [name] * len(rows),
        }, name=f"{anchor}:{name}")
        kw = {"legend_label": name} if series is not None else {}
        fig.line("x", "y", source=source, line_width=2, color=_color(i), **kw)
        dots = fig.scatter("x", "y", source=source, size=6, color=_color(i), **kw)
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[("", "@series"), (x, "@x_text"), (y, "@y_text")]))
    if x_unit == "B" and log_x:
        _bytes_log_axis(fig)
        fig.xaxis.axis_label = x
    else:
        _unit_axis(fig.xaxis[0], x, x_unit, log_x)
    _unit_axis(fig.yaxis[0], y, y_unit, log_y)
    if series is not None:
        fig.legend.location = "top_left"
        fig.legend.click_policy = "hide"
    return Figure(title=title, model=fig, anchor=anchor)
