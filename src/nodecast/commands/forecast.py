"""``nodecast forecast TRACE --from A --to B``: the whole application's end-to-end time on node B.

Rebuilds the program's operation graph from the trace (kernels, copies,
memsets, host API calls, synchronisation), gives every op its time on B from
the projection models (transfers: AHEAD; kernels: the roofline with
--metrics, the metrics-free kernel models otherwise; ops no model handles
keep their time on A and are listed), replays the graph on B and prints:
end-to-end time (first API call to last GPU op) measured on A and forecast
on B, GPU-busy time per GPU, GPU time per category, the critical path on A
and on B, and the ops that moved the result most. Several targets
(--to a,b,c) or a sweep over machine parameters (--sweep link.gen=3,4,5)
give one comparison table and --png chart.
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd
from rich.markup import escape

from nodecast.commands import common
from nodecast.commands.transfer_options import add_transfer_options, host_memory, one_byte_given
from nodecast.report import tables as t


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("forecast", help="forecast the whole application's end-to-end time on another node",
                       description=__doc__)
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, Parquet) or sample:NAME")
    common.add_machine_options(p)
    for action in p._actions:  # --to takes a list here
        if action.dest == "target":
            action.help = ("node(s) to forecast on, comma-separated (catalogue name, machine TOML file, or "
                           "GPU[xN][@HOST] composed from a data sheet)")
    common.add_model_option(p)
    common.add_metrics_option(p)
    add_transfer_options(p)
    p.add_argument("--host-scale", type=float, default=1.0, metavar="F",
                   help="multiply host time (API calls, gaps between calls) by F on the target (default 1: unchanged)")
    p.add_argument("--launch-us", type=float, default=None, metavar="US",
                   help="launch latency on the target, µs (default: the source trace's calibration)")
    p.add_argument("--copy-engines", type=int, metavar="N", default=None,
                   help="copy engines per direction per GPU (default: from the trace)")
    p.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2",
                   help="what-if over a machine parameter of every --to node, repeatable (cartesian product): "
                        "link.gen, link.lanes, link.links, gpu.count, gpu.dram_gbps, cpu.mem_gbps")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="forecasts at once on a local Dask cluster (several targets; default: 1 unless the work is large)")
    p.add_argument("--cluster", metavar="ADDRESS", default=None, help="run the targets on this Dask scheduler")
    p.add_argument("--top", type=int, default=10, metavar="N", help="ops that moved the result most to list (default 10)")
    p.add_argument("--trace", dest="chrome", metavar="OUT.json",
                   help="write the measured (A) and forecast (B) timelines as one Chrome trace (Perfetto); one target")
    p.add_argument("-o", "--output", metavar="OPS.csv|.parquet",
                   help="write every op's durations and start/end on A and B; one target")
    p.add_argument("--table", metavar="FILE", help="write the per-category (one target) or comparison table "
                                                   "(.csv, .parquet or .json)")
    p.add_argument("--png", metavar="FILE", help="chart of the end-to-end forecast per target (.png, .svg, .pdf)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.fileio import check_writable
    from nodecast.graph import export
    from nodecast.graph.cost import CostOptions
    from nodecast.graph.targets import split_targets, target_specs
    from nodecast.report.export import check_table_path
    from nodecast.report.figures import check_figure_path

    if args.target is None:
        raise InputError("missing --to MACHINE", key="--to", hint="nodecast forecast TRACE --to MACHINE[,MACHINE...]")
    if args.copy_engines is not None and args.copy_engines < 1:
        raise InputError(f"must be at least 1 (got {args.copy_engines})", key="--copy-engines")
    if args.top < 0:
        raise InputError(f"must be at least 0 (got {args.top})", key="--top")
    specs = target_specs(split_targets(args.target), args.sweep)
    several = len(specs) > 1
    for path, option, check in ((args.chrome, "--trace", export.check_trace_path),
                                (args.output, "-o", export.check_ops_path), (args.table, "--table", check_table_path),
                                (args.png, "--png", check_figure_path)):
        if path:
            if several and option in ("--trace", "-o"):
                raise InputError(f"writes one target's timeline; {len(specs)} targets given", key=option,
                                 hint="Forecast one --to machine (no --sweep) to write it")
            check(path)
            check_writable(path, option)
    options = CostOptions(models=tuple(m) if (m := common.parse_models(args.models)) else None,
                          metrics=common.metrics(args), one_byte_s=one_byte_given(args), host_scale=args.host_scale,
                          launch_latency_s=None if args.launch_us is None else args.launch_us * 1e-6,
                          host_memory=host_memory(args)).check()
    if several:
        return _run_targets(args, specs, options)
    return _run_one(args, specs[0], options)


def _run_one(args: argparse.Namespace, spec, options) -> int:  # noqa: ANN001
    from nodecast.graph import export
    from nodecast.graph.forecast import forecast, read_trace_and_api
    from nodecast.graph.targets import comparison_of, write_chart
    from nodecast.machines import resolve_source
    from nodecast.report.export import write_table

    trace, api = read_trace_and_api(args.trace)
    source = resolve_source(trace, args.source, args.allow_gpu_mismatch)
    result = forecast(trace, api, source, spec.load(), options, copy_engines_per_direction=args.copy_engines)
    if args.json:
        print(json.dumps(result.summary(args.top), indent=1, default=float))
    else:
        _print(result, args.top)
    for path, write in ((args.chrome, export.write_chrome_trace), (args.output, export.write_ops),
                        (args.table, lambda r, p: write_table(r.categories(), p)),
                        (args.png, lambda r, p: write_chart(comparison_of([(spec.label, r)]), p))):
        if path:
            print(f"wrote {write(result, path)}", file=sys.stderr)
    return 0


def _print(result, top: int) -> None:  # noqa: ANN001
    g = result.graph
    console = t.console()
    gpus = ", ".join(f"{d}: {n}" for d, n in sorted(g.gpus.items())) or "not recorded"
    console.print(f"[bold]{escape(g.source)}[/] ({g.format}; GPUs {escape(gpus)}); {len(g):,} ops, {g.n_edges:,} "
                  f"edges; {escape(result.source.name)} -> {escape(result.target.name)}", soft_wrap=True)
    low, high = result.interval_s
    e2e = result.end_to_end_s
    interval = _interval(low, e2e, high)
    rows = [{"quantity": "end to end (first API call to last GPU op end)", "measured on A": result.measured_end_to_end_s,
             "replayed on A": result.replayed_end_to_end_s, "forecast on B": e2e, "interval on B": interval,
             "B / A": e2e / result.measured_end_to_end_s if result.measured_end_to_end_s else float("nan")}]
    busy = result.busy_s()
    for d in sorted(busy["measured on A"]):
        m, f = busy["measured on A"][d], busy["forecast on B"].get(d, float("nan"))
        rows.append({"quantity": f"GPU {d} busy (union of op intervals)", "measured on A": m,
                     "replayed on A": busy["replayed on A"].get(d, float("nan")), "forecast on B": f,
                     "interval on B": "", "B / A": f / m if m else float("nan")})
    fmt = {"measured on A": t.fmt_seconds, "replayed on A": t.fmt_seconds, "forecast on B": t.fmt_seconds,
           "B / A": lambda v: f"{v:.3f}x"}
    t.render(pd.DataFrame(rows), f"Whole-application forecast, {escape(result.source.name)} (A) -> "
             f"{escape(result.target.name)} (B)",
             fmt, console)
    cats = result.categories()
    shown = cats.drop(columns=["low_s", "high_s"]) if not result.costs.has_interval else cats
    t.render(shown.rename(columns={"source_s": "on A", "target_s": "on B", "low_s": "low", "high_s": "high"}),
             "GPU time per category (sum of op durations) and the models that gave it",
             {"ops": t.fmt_int, "on A": t.fmt_seconds, "on B": t.fmt_seconds, "low": t.fmt_seconds,
              "high": t.fmt_seconds}, console)
    cp = result.critical_paths()
    if len(cp):
        t.render(cp.rename(columns={"on_a_s": "on A (replayed)", "on_b_s": "on B (forecast)", "change_s": "change"}),
                 "Critical path by category (each column sums to its end to end)",
                 {"on A (replayed)": t.fmt_seconds, "on B (forecast)": t.fmt_seconds, "change": _signed}, console)
    movers = result.movers(top)
    if top and len(movers):
        movers = movers.assign(name=movers["name"].str.slice(0, 60).map(escape))
        t.render(movers.rename(columns={"on_a_s": "on A's path", "on_b_s": "on B's path", "change_s": "change"}),
                 "Ops that moved the end to end most (time they add to the critical path)",
                 {"ops": t.fmt_int, "on A's path": t.fmt_seconds, "on B's path": t.fmt_seconds, "change": _signed},
                 console)
    prov = result.costs.provenance(g)
    t.render(prov.rename(columns={"source_s": "time on A", "target_s": "time on B"}),
             "Where each op's time on B comes from (source: kept at its time on A; host: host work)",
             {"ops": t.fmt_int, "time on A": t.fmt_seconds, "time on B": t.fmt_seconds}, console)
    kept = result.kept()
    if len(kept):
        kept = kept.assign(name=kept["name"].str.slice(0, 70).map(escape))
        t.render(kept.rename(columns={"source_s": "time on A"}), "GPU ops kept at their time on A (no model handles them)",
                 {"ops": t.fmt_int, "time on A": t.fmt_seconds}, console)
    for note in result.notes:
        console.print(f"note: {note}", soft_wrap=True, markup=False, highlight=False)


def _interval(low: float, mid: float, high: float) -> str:
    """``low – high``, or "—" when no model gave an interval or it rounds to one value."""
    lo, hi = t.fmt_seconds(low), t.fmt_seconds(high)
    return "—" if lo == hi else f"{lo} – {hi}"


def _signed(value: object) -> str:
    v = float(value)  # type: ignore[arg-type]
    return ("+" if v > 0 else "-" if v < 0 else "") + t.fmt_seconds(abs(v))


def _progress(total: int, label: str):  # noqa: ANN202
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # NOTE: the bar goes to stderr, so that results piped or redirected from stdout stay clean.
    err = Console(stderr=True)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err, transient=True, disable=not err.is_terminal)
    return progress, progress.add_task(label, total=total)


def _run_targets(args: argparse.Namespace, specs, options) -> int:  # noqa: ANN001
    from nodecast.graph.forecast import read_trace_and_api
    from nodecast.graph.targets import compare_targets, write_chart
    from nodecast.report.export import write_table

    trace, api = read_trace_and_api(args.trace)
    progress, task = _progress(len(specs), "forecasting")
    with progress:
        comp = compare_targets(trace, api, specs, source=args.source, allow_gpu_mismatch=args.allow_gpu_mismatch,
                               options=options, copy_engines_per_direction=args.copy_engines, jobs=args.jobs,
                               address=args.cluster, progress=lambda _: progress.advance(task))
    table = comp.table()
    if args.json:
        print(json.dumps({"trace": comp.trace, "source": comp.source,
                          "measured_end_to_end_s": comp.measured_end_to_end_s,
                          "replayed_end_to_end_s": comp.replayed_end_to_end_s,
                          "targets": table.to_dict(orient="records"), "notes": comp.notes}, indent=1, default=float))
    else:
        console = t.console()
        console.print(f"[bold]{escape(comp.trace)}[/] on {escape(comp.source)} (A): end to end {t.fmt_seconds(comp.measured_end_to_end_s)} "
                      f"measured, {t.fmt_seconds(comp.replayed_end_to_end_s)} replayed", soft_wrap=True)
        shown = pd.DataFrame({"target": table["target"].map(escape), "end to end": table["end_to_end_s"],
                              "interval": [_interval(lo, mid, hi) for lo, mid, hi in
                                           zip(table["low_s"], table["end_to_end_s"], table["high_s"], strict=True)],
                              "A / B": table["speedup"], "GPU busy": table["gpu_busy_s"],
                              "kernels": table["kernels_s"], "copies": table["copies_s"],
                              "memsets": table["memsets_s"], "path: GPU": table["path_gpu_s"],
                              "path: host": table["path_host_s"], "path: waits": table["path_other_s"],
                              "kept ops": table["kept_ops"]})
        if not (shown["memsets"] > 0).any():
            shown = shown.drop(columns="memsets")
        secs = ["end to end", "GPU busy", "kernels", "copies", "memsets", "path: GPU", "path: host", "path: waits"]
        t.render(shown, "Forecast per target (end to end = first API call to last GPU op end; A / B > 1: B is faster; "
                        "GPU busy summed over GPUs; kernels, copies: summed op time; path: the critical path split into "
                        "GPU work, host work and launch/dependency waits; kept ops: GPU ops no model handles)",
                 {**dict.fromkeys(secs, t.fmt_seconds), "A / B": lambda v: f"{v:.3f}x", "kept ops": t.fmt_int},
                 console)
        common_notes = comp.common_notes()
        for note in common_notes:
            console.print(f"note: {note}", soft_wrap=True, markup=False, highlight=False)
        for label, notes in comp.notes.items():
            for note in notes:
                if note not in common_notes:
                    console.print(f"note ({label}): {note}", soft_wrap=True, markup=False, highlight=False)
    if args.table:
        print(f"wrote {write_table(table, args.table)}", file=sys.stderr)
    if args.png:
        print(f"wrote {write_chart(comp, args.png)}", file=sys.stderr)
    return 0
