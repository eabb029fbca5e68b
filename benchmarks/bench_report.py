"""Size and write time of the HTML report of a synthetic 100 k-op forecast (measured and forecast timelines).

The input (made here, in memory, with a fixed seed): per timeline, ``--ops``
GPU ops on ``--streams`` streams of one GPU (kernels, and every fourth op a
copy or a memset), each launched by its own runtime call on one host thread
(cudaLaunchKernel / cudaMemcpyAsync / cudaMemsetAsync, every 1001st a
cudaStreamSynchronize), so a timeline holds 2 x ``--ops`` ops; ``--kernels``
distinct kernel names of C++-template length. Durations and gaps are
log-normal with random nanoseconds (nothing rounds, which is the hard case
for compression). The forecast timeline is the measured one with every
duration scaled by a per-kind random factor and the ops packed as early as
their stream and the host allow (a plausible forecast; its values do not
matter here, only its size).

Measured in a fresh process, wall and CPU time (the CPU time varies less
with the load of other work on the machine):

  import   ``import nodecast.report.html`` and the Bokeh modules a page
           needs (paid once per command)
  write    ``write_page`` of a page with the headline, inputs, a table and
           the two-timeline figure, from DataFrames to the file on disk:
           the first (what a command pays, with Bokeh's first-use costs)
           and the median of the ``--repeat`` - 1 later ones

and prints the file size, the bytes per op, and how the size splits into
BokehJS, the packed timeline and the rest. With ``--browser`` (needs
/usr/bin/chromium and Playwright), it also opens the page in headless
Chromium and prints the time to unpack and first draw the timeline and to
redraw it after a zoom. Figures, not a test: nothing here asserts a speed.

    python benchmarks/bench_report.py [--ops 100000] [--streams 8] [--browser]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic(n_ops: int, n_streams: int, n_kernels: int, seed: int = 0):  # noqa: ANN201
    """(measured, forecast) op tables: columns track, start_s, end_s, kind, name (see the module docstring)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    kinds = np.where(rng.random(n_ops) < 0.75, 0, rng.integers(1, 4, n_ops))  # kernel, HtoD, DtoH, memset
    kind_names = np.array(["kernel", "memcpy HtoD", "memcpy DtoH", "memset"])
    kernel_names = np.array([f"void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<{i}, 128, 256, 64>>"
                             f"(cutlass_{i}::Params)" for i in range(n_kernels)])
    names = np.where(kinds == 0, kernel_names[rng.integers(0, n_kernels, n_ops)],
                     np.array(["", "memcpy HtoD", "memcpy DtoH", "memset"])[kinds])
    stream = rng.integers(0, n_streams, n_ops)
    gpu_dur = rng.lognormal(np.log(20e-6), 1.2, n_ops)
    api_dur = rng.lognormal(np.log(1.5e-6), 0.5, n_ops)
    host_gap = rng.lognormal(np.log(0.5e-6), 1.0, n_ops)
    api_names = np.array(["cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemcpyAsync", "cudaMemsetAsync"])[kinds]
    sync = (np.arange(n_ops) % 1001) == 1000
    api_names = np.where(sync, "cudaStreamSynchronize", api_names)

    def schedule(gpu: np.ndarray, api: np.ndarray) -> pd.DataFrame:
        # Host calls back to back with gaps; a GPU op starts after its call and after its stream's previous op.
        api_start = np.cumsum(host_gap + np.concatenate([[0.0], api[:-1]]))
        gpu_start = np.empty(n_ops)
        stream_free = np.zeros(n_streams)
        for s in range(n_streams):  # per stream: start = max(launch, previous end), a running maximum
            idx = np.flatnonzero(stream == s)
            launch = api_start[idx] + api[idx]
            d = gpu[idx]
            # start_i = max(launch_i, start_{i-1} + d_{i-1}) <=> start_i - D_i = running max of launch_j - D_j
            before = np.concatenate([[0.0], np.cumsum(d)[:-1]])
            gpu_start[idx] = np.maximum.accumulate(launch - before) + before
            stream_free[s] = gpu_start[idx][-1] + d[-1] if idx.size else 0.0
        origin = min(api_start.min(), gpu_start.min())
        gpu_rows = pd.DataFrame({"track": [f"GPU 0 stream {7 + s}" for s in stream], "start_s": gpu_start - origin,
                                 "end_s": gpu_start + gpu - origin, "kind": kind_names[kinds], "name": names})
        api_rows = pd.DataFrame({"track": "host thread 1", "start_s": api_start - origin,
                                 "end_s": api_start + api - origin, "kind": "runtime API", "name": api_names})
        return pd.concat([gpu_rows, api_rows], ignore_index=True)

    factor = rng.uniform(0.4, 0.9, 4)[kinds]
    return schedule(gpu_dur, api_dur), schedule(gpu_dur * factor, api_dur)


def page_for(measured, forecast):  # noqa: ANN001, ANN201
    """The report page of a forecast: headline, inputs, a per-kind table and the two timelines."""
    import pandas as pd

    from nodecast.report import html as rh

    page = rh.Page("Synthetic forecast (benchmark)")
    page.headline = rh.headline([
        rh.Number("end-to-end, measured", float(measured["end_s"].max()), "s"),
        rh.Number("end-to-end, forecast", float(forecast["end_s"].max()), "s"),
    ])
    page.inputs = rh.inputs(rh.RunInputs(trace="(synthetic, in memory)", version="bench", command=sys.argv))
    per_kind = pd.DataFrame({
        "kind": sorted(measured["kind"].unique()),
    })
    for label, ops in (("measured_s", measured), ("forecast_s", forecast)):
        busy = (ops["end_s"] - ops["start_s"]).groupby(ops["kind"]).sum()
        per_kind[label] = per_kind["kind"].map(busy)
    page.tables.append(rh.table(per_kind, {"measured_s": "s", "forecast_s": "s"}, title="Busy time per kind"))
    page.figures.append(rh.timeline(measured, forecast, ("measured", "forecast")))
    return page


def measure(args: argparse.Namespace) -> dict:
    """Run in the child process: import, build the input, write the page ``--repeat`` times (wall and CPU s)."""
    w0, c0 = time.perf_counter(), time.process_time()
    import bokeh
    import bokeh.embed
    import bokeh.layouts
    import bokeh.models
    import bokeh.plotting  # noqa: F401

    from nodecast.report import html as rh
    from nodecast.report.html.timelines import encode, pack

    t_import = (time.perf_counter() - w0, time.process_time() - c0)
    measured, forecast = synthetic(args.ops, args.streams, args.kernels)
    out = Path(args.out)
    times = []
    for _ in range(args.repeat):
        w, c = time.perf_counter(), time.process_time()
        rh.write_page(page_for(measured, forecast), out)
        times.append((time.perf_counter() - w, time.process_time() - c))
    kinds = sorted(set(measured["kind"]) | set(forecast["kind"]))
    packed = sum(len(json.dumps(encode(pack(ops, "x", kinds)))) for ops in (measured, forecast))
    from bokeh.resources import Resources

    bokeh_js = len(Resources(mode="inline", components=["bokeh"]).render_js().encode())
    size = out.stat().st_size
    return {"ops": len(measured) + len(forecast), "import": t_import, "writes": times, "size": size,
            "bokeh_js": bokeh_js, "packed": packed, "bokeh": bokeh.__version__}


def browser(path: Path) -> dict:
    """Open the report in headless Chromium; time the timeline's first draw and a redraw after zooming in."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path="/usr/bin/chromium", headless=True, offline=True,
            viewport={"width": 1400, "height": 900},
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        page = ctx.new_page()
        t = time.perf_counter()
        page.goto(path.resolve().as_uri())
        page.wait_for_function("() => { const t = window.ncTimelines && window.ncTimelines['nc-timeline-timeline'];"
                               " return t && t.draws >= 1; }", timeout=60_000)
        first = time.perf_counter() - t
        redraw = page.evaluate("""() => {
            const tl = window.ncTimelines['nc-timeline-timeline'];
            const t0 = performance.now();
            tl.xr.setv({start: tl.xr.end * 0.4, end: tl.xr.end * 0.45});
            ncTimelineDraw(tl);
            const t1 = performance.now();
            return {ms: t1 - t0, bars: tl.panels.map(p => p.view.bars), inView: tl.panels.map(p => p.view.inView),
                    full: tl.panels.map(p => p.n)};
        }""")
        ctx.close()
    return {"open_to_first_draw_s": first, "zoom_redraw_ms": redraw["ms"], "zoom_bars": redraw["bars"],
            "zoom_ops_in_view": redraw["inView"], "ops": redraw["full"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=100_000, help="GPU ops per timeline (each with its host call)")
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--kernels", type=int, default=200, help="distinct kernel names")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="", help="where to write the report (default: a temporary folder)")
    ap.add_argument("--browser", action="store_true", help="also time the page in headless Chromium")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or Path(tmp) / "report.html")
        cmd = [sys.executable, __file__, "--child", "--ops", str(args.ops), "--streams", str(args.streams),
               "--kernels", str(args.kernels), "--repeat", str(args.repeat), "--out", str(out)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        mib = 1024 * 1024
        print(f"input: 2 timelines x ({args.ops:,} GPU ops on {args.streams} streams + {args.ops:,} host calls)"
              f" = {r['ops']:,} ops")
        print(f"file:  {r['size'] / mib:.2f} MiB ({r['size']:,} B; {r['size'] / r['ops']:.1f} B per op)")
        print(f"       BokehJS {r['bokeh_js'] / mib:.2f} MiB, packed timelines {r['packed'] / mib:.2f} MiB"
              f" ({r['packed'] / r['ops']:.1f} B per op), rest {(r['size'] - r['bokeh_js'] - r['packed']) / 1024:.0f} KiB")
        (iw, ic), (fw, fc) = r["import"], r["writes"][0]
        later = r["writes"][1:]
        print(f"time:  import {iw:.2f} s (CPU {ic:.2f} s) + first write {fw:.2f} s (CPU {fc:.2f} s)"
              f" = {iw + fw:.2f} s (CPU {ic + fc:.2f} s), as a command pays it; Bokeh {r['bokeh']}")
        if later:
            print(f"       later writes in the same process: median {statistics.median(w for w, _ in later):.2f} s"
                  f" (CPU {statistics.median(c for _, c in later):.2f} s) of {len(later)}")
        if args.browser:
            b = browser(out)
            print(f"browser: open to first timeline draw {b['open_to_first_draw_s']:.2f} s; zoom to 5 % of the span:"
                  f" redraw {b['zoom_redraw_ms']:.0f} ms, {b['zoom_ops_in_view']} ops in view drawn as"
                  f" {b['zoom_bars']} bars")


if __name__ == "__main__":
    main()
