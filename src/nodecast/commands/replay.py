"""``nodecast replay TRACE``: rebuild the program's operation graph and replay it on the same node.

Prints the measured and replayed end-to-end time (first API call to the end
of the last GPU op), GPU-busy time per device and the critical path of the
replay by category. The replay reads only op durations, host gaps between
calls and the first timestamp, so the difference measures the dependency
model alone.
"""

from __future__ import annotations

import argparse
import json

import pandas as pd

from nodecast.report import tables as t


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a trace's operation graph on its own node (measured vs replayed)",
                       description=__doc__)
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, Parquet) or sample:NAME")
    p.add_argument("--trace", dest="chrome", metavar="OUT.json",
                   help="write the measured and replayed timelines as one Chrome trace (Perfetto, chrome://tracing)")
    p.add_argument("-o", "--output", metavar="OPS.csv|.parquet", help="write every op's measured and replayed start/end")
    p.add_argument("--copy-engines", type=int, metavar="N", default=None,
                   help="copy engines per direction per GPU (default: from the trace; 1 serialises same-direction copies)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.fileio import check_writable
    from nodecast.graph import export
    from nodecast.graph.result import replay_trace

    if args.copy_engines is not None and args.copy_engines < 1:
        raise InputError(f"must be at least 1 (got {args.copy_engines})", key="--copy-engines")
    for path, option, check in ((args.chrome, "--trace", export.check_trace_path),
                                (args.output, "-o", export.check_ops_path)):
        if path:
            check(path)
            check_writable(path, option)
    result = replay_trace(args.trace, copy_engines_per_direction=args.copy_engines)
    if args.json:
        print(json.dumps(_as_dict(result), indent=1))
    else:
        _print(result)
    written = []
    if args.chrome:
        written.append(str(export.write_chrome_trace(result, args.chrome)))
    if args.output:
        written.append(str(export.write_ops(result, args.output)))
    if written and not args.json:
        print(f"wrote {', '.join(written)}")
    return 0


def _as_dict(result) -> dict:  # noqa: ANN001
    g = result.graph
    return {
        "source": g.source, "format": g.format, "gpus": {str(k): v for k, v in g.gpus.items()},
        "end_to_end_s": {"measured": result.measured_end_to_end_s, "replayed": result.replayed_end_to_end_s,
                         "error": result.end_to_end_error},
        "gpu_busy_s": {str(d): {"measured": result.measured_busy_s[d], "replayed": result.replayed_busy_s.get(d),
                                "error": result.busy_error(d)} for d in result.measured_busy_s},
        "gpu_time_s": {str(d): v for d, v in result.gpu_time_s.items()},
        "critical_path_s": result.critical_path_s,
        "graph": g.counts(), "params": g.params, "notes": result.notes,
    }


def _print(result) -> None:  # noqa: ANN001
    g = result.graph
    console = t.console()
    gpus = ", ".join(f"{d}: {n}" for d, n in sorted(g.gpus.items())) or "not recorded"
    console.print(f"[bold]{g.source}[/] ({g.format}; GPUs {gpus}); {len(g):,} ops, {g.n_edges:,} edges",
                  soft_wrap=True)
    rows = [{"quantity": "end to end (first API call to last GPU op end)", "measured": result.measured_end_to_end_s,
             "replayed": result.replayed_end_to_end_s, "error": 100 * result.end_to_end_error}]
    for d in sorted(result.measured_busy_s):
        rows.append({"quantity": f"GPU {d} busy (union of op intervals)", "measured": result.measured_busy_s[d],
                     "replayed": result.replayed_busy_s.get(d, float("nan")), "error": 100 * result.busy_error(d)})
        rows.append({"quantity": f"GPU {d} op time (sum of durations)", "measured": result.gpu_time_s[d],
                     "replayed": result.gpu_time_s[d], "error": 0.0})
    t.render(pd.DataFrame(rows), "Same-node replay with measured durations",
             {"measured": t.fmt_seconds, "replayed": t.fmt_seconds, "error": t.fmt_pct}, console)
    total = sum(result.critical_path_s.values())
    cp = pd.DataFrame([{"category": k, "time": v, "share": v / total if total else float("nan")}
                       for k, v in sorted(result.critical_path_s.items(), key=lambda kv: -kv[1])])
    if len(cp):
        t.render(cp, "Critical path of the replay, by category (sums to the replayed end to end)",
                 {"time": t.fmt_seconds, "share": t.fmt_share}, console)
    lat = g.params.get("launch_latency_s", {})
    if lat:
        console.print("launch latency (calibrated, from the call's end): "
                      + ", ".join(f"{k} {t.fmt_seconds(v)}" for k, v in lat.items()), soft_wrap=True)
    for note in result.notes:
        console.print(f"note: {note}", soft_wrap=True, markup=False)
