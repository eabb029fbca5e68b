"""Zoomable timelines (measured over forecast, or a per-worker Gantt) that stay small at 100 k ops.

A timeline is one row per track (a GPU stream, a host thread, a worker)
and one bar per op. Drawing 200 k bars would make the file large and the
browser slow, and at the first zoom most of them are narrower than a pixel.
So the page carries every op once, compactly, and draws what a pixel can
show:

* **Packed detail.** Per timeline, ops are sorted by (track, start) and
  stored as four columns: start as the gap in integer ns since the previous
  op of its track (the first one: since time 0), duration in ns, kind code,
  name code; tracks are op counts (the sort makes them contiguous). Each
  column takes the smallest unsigned type that holds it (uint8/16/32, or
  float64 beyond 2^32 ns = 4.3 s), its bytes are shuffled (all first bytes,
  then all second bytes ... as Blosc's shuffle filter does, so the high
  bytes that are mostly zero form long runs), deflated (zlib) and
  base64-encoded. Unique names are joined by newlines and deflated too.
  docs/report.md gives the bytes per op measured by
  benchmarks/bench_report.py.
* **Merged below one pixel, per view.** In the browser,
  ``DecompressionStream("deflate")`` unpacks the columns once; on every
  change of the shared x range (pan, zoom, reset, resize) ``ncMerge``
  walks the ops in view of each track in start order and lets an op join
  the bar before it when it starts at most one pixel (``gap``, in ns at the
  current zoom) after that bar's end and at most two pixels after the bar's
  start. A bar is coloured by the kind with the most time in it (each op
  counting one extra ns, so that zero-length ops count; ties go to the
  first kind) and made as opaque as it is busy (alpha 0.15 + 0.85 x busy /
  length), so a stream that is 30 % busy does not read as a solid block;
  its tooltip gives its op count, busy time and, for a single op, its name.
  The two-pixel cap keeps the bars drawn under about (tracks x pixels)
  whatever the number of ops; zooming in gives back single ops with their
  exact times (1 ns resolution).
"""

from __future__ import annotations

import base64
import html
import re
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nodecast.report.html.colors import category_colors
from nodecast.report.html.page import Figure
from nodecast.words import plural

#: Pixels a track row takes, and the plot's height beyond the rows (title, axis, toolbar).
_ROW_PX, _FRAME_PX = 22, 70
_ZLIB_LEVEL = 6


@dataclass(frozen=True)
class Packed:
    """One timeline's ops, sorted by (track, start), as the page carries them (see the module docstring)."""

    label: str
    tracks: list[str]
    counts: np.ndarray  # ops per track, in track order
    start_ns: np.ndarray  # int64, sorted within each track
    end_ns: np.ndarray  # int64
    kind: np.ndarray  # index into the report's kind list
    name: np.ndarray  # index into names
    names: list[str]
    dropped: int  # ops without a start or an end (not drawn)

    @property
    def n_ops(self) -> int:
        return int(self.start_ns.size)


def natural_key(text: str) -> list[object]:
    """``GPU 0 stream 7`` before ``GPU 0 stream 13``: digits compare as numbers."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def _coded(ops: pd.DataFrame, column: str, default: str) -> tuple[np.ndarray, list[str]]:
    """Codes of ``ops[column]`` and its distinct values as text, in one hashing pass (``column`` absent: all ``default``).

    A categorical column gives its own codes, into the categories that occur
    (no hashing: a timeline of millions of ops carries names that way).
    """
    if column not in ops.columns:
        return np.zeros(len(ops), np.int32), [default]
    col = ops[column]
    if isinstance(col.dtype, pd.CategoricalDtype) and not col.isna().any():
        col = col.cat.remove_unused_categories()
        return col.cat.codes.to_numpy(), [str(c) for c in col.cat.categories]
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    return codes.astype(np.int32), [str(u) for u in uniques]


def _recode(codes: np.ndarray, found: list[str], order: list[str]) -> np.ndarray:
    """``codes`` into ``found`` as codes into ``order`` (every value of ``found`` is in ``order``), int32."""
    where = {v: i for i, v in enumerate(order)}
    return np.array([where[v] for v in found], dtype=np.int32)[codes] if codes.size else codes.astype(np.int32)


def check_ops(ops: pd.DataFrame, what: str) -> None:
    """ValueError unless ``ops`` has columns track, start_s and end_s with end >= start."""
    missing = {"track", "start_s", "end_s"} - set(ops.columns)
    if missing:
        raise ValueError(f"{what}: ops lack columns {sorted(missing)} (need track, start_s, end_s; kind, name optional)")
    start, end = ops["start_s"].to_numpy(np.float64), ops["end_s"].to_numpy(np.float64)
    bad = np.flatnonzero(end < start)
    if bad.size:
        raise ValueError(f"{what}: {bad.size:,} ops end before they start (first: row {int(bad[0])})")


def pack(ops: pd.DataFrame, label: str, kinds: list[str]) -> Packed:
    """``ops`` (columns track, start_s, end_s [, kind, name]; seconds after the timeline's origin) sorted and coded.

    Times are rounded to integer ns. Ops without a start or end (NaN) are
    left out and counted in ``dropped``. ``kinds`` lists every kind of the
    report (colours stay the same across timelines).
    """
    check_ops(ops, label)
    start_s, end_s = ops["start_s"].to_numpy(np.float64), ops["end_s"].to_numpy(np.float64)
    ok = np.isfinite(start_s) & np.isfinite(end_s)
    codes, found = _coded(ops, "track", "")
    col = ops["track"]
    tracks = ([str(c) for c in col.cat.categories] if isinstance(col.dtype, pd.CategoricalDtype)
              else sorted(found, key=natural_key))
    track_code = _recode(codes, found, tracks)[ok]
    codes, found = _coded(ops, "kind", "op")
    unknown = sorted(set(found) - set(kinds))
    if unknown:
        raise ValueError(f"{label}: kinds {unknown} are not in the report's kind list {kinds}")
    kind_code = _recode(codes, found, kinds)[ok]
    name_code, found = _coded(ops, "name", "")
    name_code, names = pd.factorize(name_code[ok])  # only the names of ops that are drawn
    names = [found[i] for i in names]
    start_ns = np.rint(start_s[ok] * 1e9).astype(np.int64)
    end_ns = np.rint(end_s[ok] * 1e9).astype(np.int64)
    order = np.lexsort((end_ns, start_ns, track_code))
    counts = np.bincount(track_code, minlength=len(tracks))
    # Codes stay int32 (kinds and names are far fewer than 2^31): half the bytes of int64 on every op.
    return Packed(
        label=label, tracks=tracks, counts=counts, start_ns=start_ns[order], end_ns=end_ns[order],
        kind=kind_code[order], name=name_code[order].astype(np.int32),
        names=[n.replace("\n", " ") for n in names], dropped=int((~ok).sum()),
    )


def _column(values: np.ndarray) -> dict[str, object]:
    """A non-negative integer column: smallest dtype, byte-shuffled, deflated, base64 (decoded by ``ncArray``)."""
    top = int(values.max()) if values.size else 0
    if values.size and int(values.min()) < 0:
        raise ValueError("packed columns hold non-negative integers")
    dtype = next((t for t in ("<u1", "<u2", "<u4") if top <= np.iinfo(t).max), "<f8")
    raw = values.astype(dtype).tobytes()
    size = np.dtype(dtype).itemsize
    if size > 1:
        raw = np.frombuffer(raw, np.uint8).reshape(-1, size).T.tobytes()
    names = {"<u1": "uint8", "<u2": "uint16", "<u4": "uint32", "<f8": "float64"}
    return {"dtype": names[dtype], "n": int(values.size),
            "data": base64.b64encode(zlib.compress(raw, _ZLIB_LEVEL)).decode("ascii")}


def encode(p: Packed) -> dict[str, object]:
    """``p`` as the JSON the page's ``ncTimelineInit`` reads."""
    first = np.zeros(p.n_ops, dtype=bool)
    offsets = np.concatenate([[0], np.cumsum(p.counts)[:-1]])
    first[offsets[p.counts > 0]] = True
    gaps = np.diff(p.start_ns, prepend=0)
    gaps[first] = p.start_ns[first]
    if (gaps < 0).any():
        raise ValueError(f"{p.label}: ops start before time 0")
    names = "\n".join(p.names).encode("utf-8")
    return {
        "label": p.label, "tracks": p.tracks, "counts": [int(c) for c in p.counts], "dropped": p.dropped,
        "start_gap_ns": _column(gaps), "dur_ns": _column(p.end_ns - p.start_ns),
        "kind": _column(p.kind), "name": _column(p.name),
        "names": base64.b64encode(zlib.compress(names, _ZLIB_LEVEL)).decode("ascii"),
    }


#: The page's timeline code: unpack the columns once, redraw merged bars on every view change.
TIMELINE_JS = r"""
window.ncTimelines = window.ncTimelines || {};
function ncBytes(b64) {
  const bin = atob(b64), out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
async function ncInflate(b64) {
  const stream = new Blob([ncBytes(b64)]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
const NC_TYPES = {uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, float64: Float64Array};
async function ncArray(spec) {
  const raw = await ncInflate(spec.data), T = NC_TYPES[spec.dtype], k = T.BYTES_PER_ELEMENT, n = spec.n;
  if (raw.length !== n * k) throw new Error("timeline column: " + raw.length + " bytes for " + n + " values");
  if (k === 1) return raw;
  const out = new Uint8Array(n * k);
  for (let b = 0; b < k; b++) for (let i = 0, o = b * n; i < n; i++) out[i * k + b] = raw[o + i];
  return new T(out.buffer);
}
async function ncUnpack(spec) {
  const [gap, dur, kind, name, names] = await Promise.all([
    ncArray(spec.start_gap_ns), ncArray(spec.dur_ns), ncArray(spec.kind), ncArray(spec.name), ncInflate(spec.names)]);
  const n = gap.length, start = new Float64Array(n), end = new Float64Array(n);
  const nt = spec.counts.length, off = new Int32Array(nt + 1), maxDur = new Float64Array(nt);
  for (let t = 0; t < nt; t++) off[t + 1] = off[t] + spec.counts[t];
  for (let t = 0; t < nt; t++) {
    let s = 0;
    for (let i = off[t]; i < off[t + 1]; i++) {
      s += gap[i]; start[i] = s; end[i] = s + dur[i];
      if (dur[i] > maxDur[t]) maxDur[t] = dur[i];
    }
  }
  return {label: spec.label, tracks: spec.tracks, n, off, start, end, kind, name, maxDur, dropped: spec.dropped,
          names: new TextDecoder().decode(names).split("\n")};
}
function ncLowerBound(a, lo, hi, x) {
  while (lo < hi) { const m = (lo + hi) >>> 1; if (a[m] < x) lo = m + 1; else hi = m; }
  return lo;
}
// Bars of one timeline in view [lo, hi] (ns): an op joins the bar before it when it starts at most gap ns
// (1 px) after the bar's end and at most 2 gap after the bar's start; see timelines.py.
function ncMerge(p, lo, hi, gap, nKinds) {
  const y = [], left = [], right = [], ops = [], busy = [], kind = [], first = [];
  const w = new Float64Array(nKinds), cap = 2 * gap;
  let inView = 0;
  for (let t = 0; t < p.tracks.length; t++) {
    let i = ncLowerBound(p.start, p.off[t], p.off[t + 1], lo - p.maxDur[t]);
    let open = false, bs = 0, be = 0, n = 0, b = 0, f = 0;
    const close = () => {
      let best = 0;
      for (let k = 1; k < nKinds; k++) if (w[k] > w[best]) best = k;
      y.push(t); left.push(bs); right.push(be); ops.push(n); busy.push(b); kind.push(best); first.push(f);
    };
    for (; i < p.off[t + 1]; i++) {
      const s = p.start[i], e = p.end[i];
      if (s > hi) break;
      if (e < lo) continue;
      inView++;
      if (open && s <= be + gap && s <= bs + cap) {
        if (e > be) be = e;
        n++; b += e - s;
      } else {
        if (open) close();
        open = true; bs = s; be = e; n = 1; b = e - s; f = i; w.fill(0);
      }
      w[p.kind[i]] += e - s + 1;
    }
    if (open) close();
  }
  return {y, left, right, ops, busy, kind, first, inView};
}
function ncPlural(n, word) { return n.toLocaleString("en-US") + " " + word + (n === 1 ? "" : "s"); }
function ncTimelineDraw(tl) {
  const lo = tl.xr.start * 1e9, hi = tl.xr.end * 1e9, lines = [];
  tl.panels.forEach((p, j) => {
    const px = Math.max(100, tl.figs[j].inner_width || 1000), gap = (hi - lo) / px;
    const r = ncMerge(p, lo, hi, gap, tl.kinds.length);
    const m = r.y.length, left = new Float64Array(m), right = new Float64Array(m), busy = new Float64Array(m);
    const density = new Float64Array(m), alpha = new Float64Array(m);
    const color = new Array(m), kindName = new Array(m), label = new Array(m);
    for (let i = 0; i < m; i++) {
      left[i] = r.left[i] * 1e-9; right[i] = r.right[i] * 1e-9; busy[i] = r.busy[i] * 1e-9;
      const len = r.right[i] - r.left[i];
      density[i] = len > 0 ? Math.min(1, r.busy[i] / len) : 1;
      alpha[i] = 0.15 + 0.85 * density[i];
      color[i] = tl.colors[r.kind[i]]; kindName[i] = tl.kinds[r.kind[i]];
      label[i] = r.ops[i] === 1 ? p.names[p.name[r.first[i]]]
                                : ncPlural(r.ops[i], "op") + " less than 1 px apart, drawn as one bar";
    }
    tl.sources[j].data = {y: Float64Array.from(r.y), left, right, busy, density, alpha,
                          ops: Float64Array.from(r.ops), color, kind: kindName, label};
    p.view = {bars: m, inView: r.inView, gapNs: gap, loNs: lo, hiNs: hi, widthPx: px};
    lines.push(p.label + ": " + r.inView.toLocaleString("en-US") + " of " + ncPlural(p.n, "op") +
               " in view, drawn as " + ncPlural(m, "bar") + " (1 px = " +
               ncFmtSeconds(gap * 1e-9) + ")");
  });
  tl.status.textContent = lines.join("; ") + ".";
  tl.draws = (tl.draws || 0) + 1;
}
function ncTimelineUpdate(id) {
  const tl = window.ncTimelines[id];
  if (!tl || !tl.ready || tl.pending) return;
  tl.pending = true;
  requestAnimationFrame(() => { tl.pending = false; ncTimelineDraw(tl); });
}
async function ncTimelineInit(id, specs, sources, figs, xr, kinds, colors) {
  const status = document.getElementById(id + "-status");
  const tl = {id, sources, figs, xr, kinds, colors, status, ready: false};
  window.ncTimelines[id] = tl;
  if (typeof DecompressionStream === "undefined") {
    status.textContent = "This browser cannot unpack the timeline (it needs DecompressionStream: " +
                         "Chrome 80, Firefox 113, Safari 16.4 or later).";
    return;
  }
  try {
    tl.panels = await Promise.all(specs.map(ncUnpack));
    tl.ready = true;
    ncTimelineDraw(tl);
  } catch (err) {
    status.textContent = "The timeline could not be unpacked: " + err;
    console.error(err);
  }
}
"""


def _kinds(frames: list[pd.DataFrame]) -> list[str]:
    found: set[str] = set()
    for f in frames:
        found.update(str(k) for k in pd.unique(f["kind"])) if "kind" in f.columns else found.add("op")
    return sorted(found, key=natural_key)


def _panel(tracks: list[str], x_range, title: str, kinds: list[str], colors: list[str]):  # noqa: ANN001, ANN202
    from bokeh.models import ColumnDataSource, CustomJSHover, FixedTicker, HoverTool, Range1d
    from bokeh.plotting import figure

    from nodecast.report.html.charts import seconds_axis

    n = max(1, len(tracks))
    fig = figure(
        title=title, x_range=x_range, y_range=Range1d(n - 0.4, -0.6),  # first track on top
        height=_FRAME_PX + _ROW_PX * n, sizing_mode="stretch_width",
        tools="xpan,xwheel_zoom,xbox_zoom,reset,save", active_scroll="xwheel_zoom", active_drag="xpan",
        toolbar_location="above",
    )
    empty = {c: [] for c in ("y", "left", "right", "busy", "density", "alpha", "ops", "color", "kind", "label")}
    source = ColumnDataSource(data=empty)
    bars = fig.hbar(y="y", left="left", right="right", height=0.78, fill_color="color", line_color="color",
                    fill_alpha="alpha", line_alpha="alpha", line_width=1, source=source)
    secs = CustomJSHover(code="return ncFmtSeconds(value)")
    share = CustomJSHover(code='return (100 * value).toFixed(1) + " %"')
    fig.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("op", "@label"), ("kind", "@kind (the most time)"), ("start", "@left{custom}"), ("end", "@right{custom}"),
        ("busy", "@busy{custom} (@density{custom} of the bar)"),
    ], formatters={"@left": secs, "@right": secs, "@busy": secs, "@density": share}))
    fig.yaxis.ticker = FixedTicker(ticks=list(range(len(tracks))))
    fig.yaxis.major_label_overrides = dict(enumerate(tracks))
    fig.ygrid.grid_line_color = None
    seconds_axis(fig.xaxis[0], "time after the first op")
    fig.xaxis.axis_label = "time after the first op"
    return fig, source


def _timeline_figure(named: list[tuple[str, pd.DataFrame]], title: str, anchor: str, what: str) -> Figure:
    """Panels of ``named`` (label, ops) one above the other, sharing one zoomable x axis."""
    from bokeh.layouts import column
    from bokeh.models import CustomJS, Range1d

    kinds = _kinds([ops for _, ops in named])
    colors = category_colors(kinds)  # a category has the same colour in the page's other figures
    # One timeline at a time is packed and encoded; only its JSON and its shape are kept (two packed timelines of
    # 20 M graph ops held 1.3 GB at once).
    specs, shapes = [], []
    for label, ops in named:
        p = pack(ops, label, kinds)
        specs.append(encode(p))
        shapes.append((p.label, p.tracks, p.n_ops, p.dropped, float(p.end_ns.max()) * 1e-9 if p.n_ops else None))
        del p
    span = max((s[4] for s in shapes if s[4] is not None), default=1.0) or 1.0
    pad = 0.01 * span
    x_range = Range1d(-pad, span + pad, bounds=(-pad, span + pad), min_interval=1e-9)
    figs, sources = [], []
    for label, tracks, n_ops, _, _ in shapes:
        fig, source = _panel(tracks, x_range, f"{label}: {plural(n_ops, 'op')} on {plural(len(tracks), 'row')}",
                             kinds, colors)
        figs.append(fig)
        sources.append(source)
    tid = f"nc-timeline-{anchor}"
    update = CustomJS(args={"id": tid}, code="ncTimelineUpdate(id)")
    x_range.js_on_change("start", update)
    x_range.js_on_change("end", update)
    for fig in figs:
        fig.js_on_change("inner_width", update)
    init = CustomJS(
        args={"id": tid, "specs": specs, "sources": sources, "figs": figs, "xr": x_range,
              "kinds": kinds, "colors": colors},
        code="ncTimelineInit(id, specs, sources, figs, xr, kinds, colors)",
    )
    dropped = sum(s[3] for s in shapes)
    note = f" {plural(dropped, 'op')} without a start or an end {'is' if dropped == 1 else 'are'} not drawn." \
        if dropped else ""
    caption = (
        f'<p class="timeline-status" id="{tid}-status">Unpacking the timeline…</p>'
        f'<p class="caption">{what} Drag to pan, scroll or drag a box to zoom, the round arrow to reset; '
        "ops less than one pixel apart are drawn as one bar, as opaque as it is busy (hover for its op count and "
        "busy time), "
        f"zooming in shows single ops with their exact times.{note}</p>"
    )
    legend = "".join(
        f'<span class="key"><span class="swatch" style="background:{c}"></span>{html.escape(k)}</span>'
        for k, c in zip(kinds, colors, strict=True)
    )
    return Figure(title=title, model=column(*figs, sizing_mode="stretch_width"), caption=caption,
                  header=f'<div class="legend">{legend}</div>',
                  scripts=(TIMELINE_JS,), on_ready=(init,), anchor=anchor)


def timeline(
    measured: pd.DataFrame,
    forecast: pd.DataFrame,
    labels: tuple[str, str] = ("measured", "forecast"),
    title: str = "Measured and forecast timelines",
    anchor: str = "timeline",
) -> Figure:
    """Two timelines one above the other, zoomable, sharing the x axis.

    ``measured`` and ``forecast``: one row per op with columns ``track``
    (row label), ``start_s`` and ``end_s`` (seconds after that timeline's
    first op), and optionally ``kind`` (colour) and ``name`` (tooltip).
    """
    return _timeline_figure([(labels[0], measured), (labels[1], forecast)], title, anchor,
                            "Each row is a GPU stream or host thread; each bar an op (colour: its kind).")


def gantt(
    tasks: pd.DataFrame,
    label: str = "simulated",
    title: str = "Tasks per worker",
    anchor: str = "gantt",
) -> Figure:
    """A Gantt chart: one row per worker (column ``track``), one bar per task (``start_s``, ``end_s``, ``kind``, ``name``)."""
    return _timeline_figure([(label, tasks)], title, anchor, "Each row is a worker; each bar a task (colour: its kind).")
