"""Size and time of ``nodecast forecast --html`` on a 100 k-op forecast (issue 14: <= 5 MB, written in <= 3 s).

The input is bench_replay.py's synthetic program (``--ops`` GPU ops on 8
streams, two kernels per copy, each launched by its own runtime call from
one host thread: a graph of about 2 x ``--ops`` ops), forecast from titan
to summit with the registry's models. In a fresh process it measures:

  forecast   nodecast.workflows.forecast.forecast (not part of the page's budget)
  import     importing Bokeh and the page's renderers (a command pays it once)
  page       nodecast.report.html.render(result, path): building the page (headline,
             both machines, tables, the two timelines of every graph op, critical
             path, per-category and per-kernel bars, not-modelled) and writing it
  again      the same, a second time in the same process (median of ``--repeat``)

and prints the file's size. Figures, not a test: nothing here asserts a speed.

    python benchmarks/bench_report_forecast.py [--ops 100000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(n_ops: int, repeat: int, out: str) -> dict:
    spec = importlib.util.spec_from_file_location("bench_replay", HERE / "bench_replay.py")
    bench_replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_replay)  # type: ignore[union-attr]
    from nodecast.workflows.forecast import forecast
    from nodecast.machines import load_machine

    trace, api = bench_replay.synthetic(n_ops, 8)
    w = time.perf_counter()
    result = forecast(trace, api, load_machine("titan"), load_machine("summit"))
    t_forecast = time.perf_counter() - w
    w, c = time.perf_counter(), time.process_time()
    import bokeh.plotting  # noqa: F401

    from nodecast.report import html
    html.render.load()
    t_import = (time.perf_counter() - w, time.process_time() - c)
    pages = []
    for _ in range(1 + repeat):
        w, c = time.perf_counter(), time.process_time()
        html.render(result, out, ["bench_report_forecast.py"])
        pages.append((time.perf_counter() - w, time.process_time() - c))
    return {"gpu_ops": len(trace), "graph_ops": len(result.graph), "forecast": t_forecast, "import": t_import,
            "pages": pages, "size": Path(out).stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help="keep the page here (default: a temporary file)")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.ops, args.repeat, args.out)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or str(Path(tmp) / "forecast.html")
        proc = subprocess.run([sys.executable, __file__, "--child", "--ops", str(args.ops), "--repeat",
                               str(args.repeat), "--out", out], capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
    first, later = r["pages"][0], r["pages"][1:]
    print(f"input:    {r['gpu_ops']:,} GPU ops -> graph of {r['graph_ops']:,} ops; forecast titan -> summit "
          f"{r['forecast']:.2f} s")
    print(f"file:     {r['size'] / 2**20:.2f} MiB ({r['size']:,} B; {r['size'] / (2 * r['graph_ops']):.1f} B per "
          "timeline op)")
    print(f"time:     import {r['import'][0]:.2f} s (CPU {r['import'][1]:.2f} s) + first page {first[0]:.2f} s "
          f"(CPU {first[1]:.2f} s) = {r['import'][0] + first[0]:.2f} s, as a command pays it")
    if later:
        print(f"          later pages in the same process: median {statistics.median(p[0] for p in later):.2f} s "
              f"(CPU {statistics.median(p[1] for p in later):.2f} s) of {len(later)}")


if __name__ == "__main__":
    main()
