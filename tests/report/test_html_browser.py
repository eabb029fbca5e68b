"""Each kind of report component opened in headless Chromium: drawn, silent, offline, and showing its inputs' numbers.

Every test writes a page, opens it from disk in Debian's Chromium
(``/usr/bin/chromium``, driven by Playwright's Python package, no
downloaded browser; offline, empty profile), and checks that the page logs
no error or warning, throws nothing, requests nothing but its own file, that
each figure drew something, and that the numbers it shows equal the inputs.
A screenshot of each page is kept (the folder is printed at the end of the
run). Inputs: two real nsys runs and a real Kineto trace from
../shared/data/traces where they are present, and small tables built in the
tests (documented formulas, seeded random numbers) for the rest.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nodecast.report import html as rh
from nodecast.report.html.charts import box_stats
from nodecast.report.html.timelines import pack
from nodecast.report.html.units import fmt
from nodecast.report.tables import fmt_bytes, fmt_seconds

def open_report(open_html, page_model: rh.Page, path: Path):  # noqa: ANN001, ANN201 - conftest's OpenPage
    """Write ``page_model`` to ``path`` and open it (``open_html``: drawn, screenshot kept)."""
    rh.write_page(page_model, path)
    return open_html(path)


# -- blocks: headline, inputs, tables, what was not modelled ----------------------------------------------------

def blocks_page() -> tuple[rh.Page, pd.DataFrame]:
    page = rh.Page("Blocks")
    page.headline = rh.headline([rh.Number("end-to-end on T4 (measured)", 0.0421875, "s"),
                                 rh.Number("end-to-end on A100 (forecast)", 0.0198, "s", 0.0181, 0.0224,
                                           "spread of the models")])
    values = pd.DataFrame({"field": ["memory bandwidth", "FP32 peak"], "value": [320e9, 8.1e12],
                           "unit": ["B/s", "flop/s"], "source": ["NVIDIA T4 data sheet", "NVIDIA T4 data sheet"]})
    page.inputs = rh.inputs(rh.RunInputs(trace="heat.sqlite", version="0.1.0",
                                         command=["nodecast", "forecast", "heat.sqlite", "--to", "A100"],
                                         machines=[rh.MachineInputs("T4", values)], models={"ahead": "copies"}))
    per_kind = pd.DataFrame({"kind": ["kernel", "memcpy", "memset", "sync"],
                             "time_s": [0.0312, 0.00125, math.nan, 2.5e-7], "bytes": [0, 3 * 2**30, 4096, 0]})
    page.tables.append(rh.table(per_kind, {"time_s": "s", "bytes": "B"}, title="Per kind"))
    page.not_modelled = rh.not_modelled(pd.DataFrame({"name": ["cudaDeviceSynchronize"], "time_s": [1e-3]}),
                                        ["host time unchanged"], {"time_s": "s"})
    return page, per_kind


def test_blocks_show_the_inputs_numbers_and_tables_sort_by_exact_value(open_html, tmp_path):
    """Headline and table numbers in the page are the inputs, with units; clicking a header sorts, NaN last."""
    page_model, per_kind = blocks_page()
    loaded = open_report(open_html, page_model, tmp_path / "blocks.html")
    loaded.assert_clean()
    page = loaded.page
    shown = page.eval_on_selector_all(".number .value", "els => els.map(e => [e.dataset.value, e.textContent])")
    assert shown == [["0.0421875", fmt(0.0421875, "s")], ["0.0198", fmt(0.0198, "s")]]
    assert page.inner_text(".number .interval").strip() == "interval 18.1 ms – 22.4 ms"
    table = "section#tables table"

    def column(i: int) -> list[str]:
        return page.eval_on_selector_all(f"{table} tbody tr", f"rows => rows.map(r => r.children[{i}].textContent)")

    assert column(1) == [fmt(v, "s") for v in per_kind["time_s"]]
    page.click(f"{table} th:nth-child(2)")
    assert column(0) == ["sync", "memcpy", "kernel", "memset"]
    page.click(f"{table} th:nth-child(2)")
    assert column(0) == ["kernel", "memcpy", "sync", "memset"]
    page.click(f"{table} th:nth-child(3)")
    assert column(2) == ["0 B", "0 B", "4 KiB", "3 GiB"]
    assert "320 GB/s" in page.inner_text("#inputs") and "8,100 GFlop/s" in page.inner_text("#inputs")


def test_the_browser_formats_times_and_bytes_as_python_does(open_html, tmp_path):
    """Tick labels and tooltips (JavaScript) print the same text as the terminal for the same value."""
    page_model, _ = blocks_page()
    loaded = open_report(open_html, page_model, tmp_path / "formats.html")
    rng = np.random.default_rng(11)
    # 1.125 s and 2.5 B are exact ties in binary: Python rounds them to even (1.12 s, 2 B), as must the page.
    times = [0.0, 4e-10, 999.96e-9, 0.0015, 0.9999, 1.125, 1.43, 795e-3, 1500.0, 1e7, *(10 ** rng.uniform(-10, 5, 200))]
    sizes = [0, 1, 2.5, 1023, 1023.6, 1536, 999.7 * 2**20, 62.7 * 2**30, *(2 ** rng.uniform(0, 60, 200))]
    got = loaded.page.evaluate("([t, b]) => [t.map(ncFmtSeconds), b.map(ncFmtBytes)]", [times, sizes])
    assert got[0] == [fmt_seconds(v) for v in times]
    assert got[1] == [fmt_bytes(v) for v in sizes]


# -- timelines ------------------------------------------------------------------------------------------------

def reference_bars(ops: pd.DataFrame, tracks: list[str], lo: float, hi: float, gap: float) -> pd.DataFrame:
    """The bars the page should draw, by the rule of report/html/timelines.py, written as a plain loop.

    ``ops``: track, start_ns, end_ns, kind (all ops of one timeline). Per
    track in (start, end) order, ops in view [lo, hi] join the open bar when
    they start at most ``gap`` after its end and at most 2 ``gap`` after its
    start; a bar's kind is the one with the most ns (plus 1 per op).
    """
    rows = []
    ops = ops.assign(t=ops["track"].map({t: i for i, t in enumerate(tracks)})).sort_values(["t", "start_ns", "end_ns"])
    for t, group in ops.groupby("t", sort=True):
        bar = None
        for s, e, k in zip(group["start_ns"], group["end_ns"], group["kind"], strict=True):
            if e < lo or s > hi:
                continue
            if bar is not None and s <= bar["right"] + gap and s <= bar["left"] + 2 * gap:
                bar["right"] = max(bar["right"], e)
                bar["ops"] += 1
            else:
                if bar is not None:
                    rows.append(bar)
                bar = {"y": t, "left": s, "right": e, "ops": 1, "w": {}}
            bar["w"][k] = bar["w"].get(k, 0) + e - s + 1
        if bar is not None:
            rows.append(bar)
    for b in rows:
        w = b.pop("w")
        b["kind"] = max(sorted(w), key=lambda k: w[k])  # kinds sort as the report lists them: ties go first
    return pd.DataFrame(rows, columns=["y", "left", "right", "ops", "kind"])


def drawn(panel: dict) -> pd.DataFrame:
    """The bars a panel drew, times back in integer ns."""
    return pd.DataFrame({"y": np.array(panel["y"], dtype=int),
                         "left": np.rint(np.array(panel["left"]) * 1e9).astype(np.int64),
                         "right": np.rint(np.array(panel["right"]) * 1e9).astype(np.int64),
                         "ops": np.array(panel["ops"], dtype=int), "kind": panel["kind"]})


def in_ns(ops: pd.DataFrame) -> pd.DataFrame:
    ok = ops["start_s"].notna() & ops["end_s"].notna()
    return pd.DataFrame({"track": ops["track"][ok], "start_ns": np.rint(ops["start_s"][ok] * 1e9).astype(np.int64),
                         "end_ns": np.rint(ops["end_s"][ok] * 1e9).astype(np.int64), "kind": ops["kind"][ok]})


def check_timeline(loaded, tid: str, frames: list[pd.DataFrame]) -> list[dict]:
    """The bars of every panel equal the reference for the panel's current view; returns the panels."""
    panels = loaded.timeline(tid)
    for panel, ops in zip(panels, frames, strict=True):
        v = panel["view"]
        tracks = pack(ops, "x", sorted(set(ops["kind"]))).tracks
        want = reference_bars(in_ns(ops), tracks, v["loNs"], v["hiNs"], v["gapNs"])
        pd.testing.assert_frame_equal(drawn(panel), want, check_dtype=False)
        assert panel["n"] == int((ops["start_s"].notna() & ops["end_s"].notna()).sum())
    return panels


def zoom(loaded, tid: str, start_s: float, end_s: float) -> None:
    """Set the shared x range as a zoom would, and wait for the redraw."""
    before = loaded.page.evaluate("id => window.ncTimelines[id].draws", tid)
    loaded.page.evaluate("([id, a, b]) => window.ncTimelines[id].xr.setv({start: a, end: b})", [tid, start_s, end_s])
    loaded.page.wait_for_function("([id, n]) => window.ncTimelines[id].draws > n", arg=[tid, before])


def trace_ops(path: Path) -> pd.DataFrame:
    """A real trace's GPU ops as a timeline table: one row per stream, seconds after its first op."""
    from nodecast.traces import OpKind, load_trace

    trace = load_trace(path)
    c = trace.columns
    origin = int(c["start_ns"].min())
    names = np.array([*trace.names, ""], dtype=object)
    return pd.DataFrame({
        "track": [f"GPU {d} stream {s}" for d, s in zip(c["device"], c["stream"], strict=True)],
        "start_s": (c["start_ns"] - origin) / 1e9, "end_s": (c["end_ns"] - origin) / 1e9,
        "kind": [OpKind(k).name.lower() for k in c["kind"]], "name": names[c["name_id"]],
    })


def test_timeline_of_two_real_runs_draws_every_op_and_merges_below_a_pixel(open_html, tmp_path, screenshots,
                                                                           shared_traces):
    """Two nsys runs of one program: all ops in view, bars as the merge rule says, before and after a zoom."""
    runs = [trace_ops(shared_traces / f"nsys_omp-offload-heat-8000_t4_data-region{s}.sqlite") for s in ("", "-run3")]
    page = rh.Page("Two runs of omp-offload-heat on a T4")
    page.figures.append(rh.timeline(runs[0], runs[1], ("run 1", "run 3")))
    loaded = open_report(open_html, page, tmp_path / "timeline.html")
    loaded.assert_clean()
    loaded.assert_figures_drawn()
    tid = "nc-timeline-timeline"
    panels = check_timeline(loaded, tid, runs)
    status = loaded.page.inner_text(f"#{tid}-status")
    for run, label in zip(runs, ("run 1", "run 3"), strict=True):
        assert f"{label}: {len(run):,} of {len(run):,} ops in view" in status
    assert all(sum(p["ops"]) == p["n"] for p in panels)  # at full view every op is in exactly one bar
    first = runs[0].sort_values("start_s").iloc[len(runs[0]) // 2]
    zoom(loaded, tid, float(first["start_s"]) - 1e-5, float(first["start_s"]) + 2e-4)
    panels = check_timeline(loaded, tid, runs)
    assert 0 < sum(p["view"]["inView"] for p in panels) < sum(len(r) for r in runs)
    loaded.page.screenshot(path=str(screenshots / "timeline-zoomed.png"))
    loaded.assert_clean()


def test_timeline_edge_cases_zero_length_long_and_missing_ops(open_html, tmp_path):
    """Zero-length ops, a 6 s op after a 10 s gap (float64 columns) and ops without times draw as the rule says."""
    rng = np.random.default_rng(7)
    n = 3000
    start = np.sort(rng.uniform(0, 1.0, n))
    dur = np.where(rng.random(n) < 0.2, 0.0, rng.lognormal(np.log(2e-5), 1.0, n))
    ops = pd.DataFrame({"track": rng.choice(["worker 0", "worker 1", "worker 10", "worker 2"], n),
                        "start_s": start, "end_s": start + dur, "kind": rng.choice(["gemm", "potrf", "trsm"], n),
                        "name": [f"task {i}" for i in range(n)]})
    ops.loc[n] = ["worker 1", 11.0, 17.0, "gemm", "long task"]
    ops.loc[n + 1] = ["worker 2", math.nan, 1.0, "trsm", "never ran"]
    page = rh.Page("Gantt edge cases")
    page.figures.append(rh.gantt(ops, label="simulated"))
    loaded = open_report(open_html, page, tmp_path / "gantt-edges.html")
    loaded.assert_clean()
    loaded.assert_figures_drawn()
    panels = check_timeline(loaded, "nc-timeline-gantt", [ops])
    assert panels[0]["n"] == n + 1
    assert "1 op without a start or an end is not drawn" in loaded.page.inner_text("#gantt")
    assert loaded.page.evaluate("() => window.ncTimelines['nc-timeline-gantt'].panels[0].tracks") == [
        "worker 0", "worker 1", "worker 2", "worker 10"]
    zoom(loaded, "nc-timeline-gantt", 0.5, 0.5005)
    check_timeline(loaded, "nc-timeline-gantt", [ops])


def test_gantt_of_a_real_kineto_trace(open_html, tmp_path, shared_traces):
    """7,747 ops of a real PyTorch training step on six streams, one row per stream, bars as the rule says."""
    ops = trace_ops(shared_traces / "kineto_training-rank0_a100-80gb.json.gz")
    page = rh.Page("Kineto training step on an A100")
    page.figures.append(rh.gantt(ops, label="A100 (measured)", title="Ops per stream"))
    loaded = open_report(open_html, page, tmp_path / "gantt.html")
    loaded.assert_clean()
    loaded.assert_figures_drawn()
    panels = check_timeline(loaded, "nc-timeline-gantt", [ops])
    assert sum(panels[0]["ops"]) == len(ops) == 7747


# -- charts ---------------------------------------------------------------------------------------------------

def _critical_path():
    breakdown = pd.DataFrame({"kernels": [0.0312, 0.0148], "copies": [0.0071, 0.0026], "host": [0.0038, 0.0038]},
                             index=["measured on T4", "forecast on A100"])

    def check(loaded) -> None:
        d = loaded.data("critical-path:bars")
        for col in breakdown.columns:
            assert d[col] == breakdown[col].tolist()
        assert [t.strip() for t in d["total_text"]] == [fmt(v, "s") for v in breakdown.sum(axis=1)]
    return rh.critical_path(breakdown), check


def _bars():
    df = pd.DataFrame({"kernel": ["nvkernel_solve_F1L210_2", "a" * 90, "memset"],
                       "T4_s": [0.0312, 0.002, 1e-6], "A100_s": [0.0148, 0.0011, math.nan]})

    def check(loaded) -> None:
        for col in ("T4_s", "A100_s"):
            d = loaded.data(f"per-kernel:{col}")
            np.testing.assert_array_equal(np.array(d["value"], dtype=float), df[col].to_numpy())
            assert d["text"] == [fmt(v, "s") for v in df[col]]
            assert d["name"] == df["kernel"].tolist()
    return rh.bars(df, "kernel", ["T4_s", "A100_s"], "s", "Per kernel", what="time", anchor="per-kernel"), check


def _error_boxes():
    rng = np.random.default_rng(2)
    errors = {"ahead": rng.lognormal(1.5, 1.0, 400), "peak-bandwidth": rng.lognormal(3.0, 0.7, 300)}

    def check(loaded) -> None:
        d = loaded.data("errors:boxes")
        for i, v in enumerate(errors.values()):
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            assert (d["q1"][i], d["median"][i], d["q3"][i], d["n"][i]) == (q1, med, q3, len(v))
            assert d["high"][i] == box_stats(v)["high"] <= q3 + 1.5 * (q3 - q1)
            assert d["median_text"][i] == fmt(med, "%")
    return rh.error_boxes(errors), check


def _bandwidth_curves():
    sizes = 2.0 ** np.arange(0, 31)
    # The AHEAD transfer model T(n) = L + n / B, with L and B of the order of a PCIe 3 link (made up here).
    curves = pd.concat([pd.DataFrame({"series": name, "bytes": sizes, "bandwidth_bps": sizes / (lat + sizes / bw)})
                        for name, lat, bw in (("T4 HtoD", 9e-6, 12.3e9), ("A100 HtoD", 6e-6, 24.1e9))])

    def check(loaded) -> None:
        for name, rows in curves.groupby("series"):
            d = loaded.data(f"bandwidth:{name}")
            assert d["bytes"] == rows["bytes"].tolist()
            np.testing.assert_allclose(d["gbps"], rows["bandwidth_bps"] / 1e9, rtol=1e-15)
    return rh.bandwidth_curves(curves, curves[curves["bytes"] >= 2**20].iloc[::4]), check


def _roofline():
    points = pd.DataFrame({"name": ["gemm", "axpy", "stencil"], "flop_per_byte": [42.0, 0.083, 1.9],
                           "flop_per_s": [14.1e12, 0.061e12, 1.1e12]})

    def check(loaded) -> None:
        d = loaded.data("roofline:points")
        assert d["intensity"] == points["flop_per_byte"].tolist()
        np.testing.assert_allclose(d["gflops"], points["flop_per_s"] / 1e9, rtol=1e-15)
        assert d["rate_text"] == [fmt(v, "flop/s") for v in points["flop_per_s"]]
    # Ceilings of an A100 SXM (NVIDIA A100 Tensor Core GPU data sheet, 2021): FP64 9.7 TFlop/s, FP64 tensor
    # 19.5 TFlop/s, HBM2e 1,935 GB/s (80 GB PCIe) -- here only as plausible inputs.
    return rh.roofline(points, {"FP64": 9.7e12, "FP64 tensor": 19.5e12}, {"HBM2e": 1.935e12}), check


def _sweep():
    df = pd.DataFrame({"size": [1024, 2048, 4096, 8192] * 2, "makespan_s": [0.011, 0.052, 0.31, 2.2, 0.012, 0.061,
                                                                            0.29, 1.9],
                       "scheduler": ["dmda"] * 4 + ["eager"] * 4})

    def check(loaded) -> None:
        for name, rows in df.groupby("scheduler"):
            d = loaded.data(f"sweep:{name}")
            assert d["y"] == rows["makespan_s"].tolist() and d["x"] == rows["size"].astype(float).tolist()
            assert d["y_text"] == [fmt(v, "s") for v in rows["makespan_s"]]
    return rh.sweep(df, "size", "makespan_s", "scheduler", "count", "s", log_x=True), check


CHARTS = {"critical-path": _critical_path, "bars": _bars, "error-boxes": _error_boxes,
          "bandwidth-curves": _bandwidth_curves, "roofline": _roofline, "sweep": _sweep}


@pytest.mark.parametrize("kind", list(CHARTS))
def test_chart_renders_offline_and_holds_the_input_numbers(open_html, tmp_path, kind):
    """Each chart kind draws without errors or requests, and the values it plots are the inputs."""
    figure, check = CHARTS[kind]()
    page = rh.Page(f"Chart: {kind}")
    page.figures.append(figure)
    loaded = open_report(open_html, page, tmp_path / f"chart-{kind}.html")
    loaded.assert_clean()
    loaded.assert_figures_drawn()
    check(loaded)
