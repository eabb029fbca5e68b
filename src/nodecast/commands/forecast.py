"""``nodecast forecast TRACE --from A --to B``: the whole application's end-to-end time on node B.

Rebuilds the program's operation graph from the trace (kernels, copies,
memsets, host API calls, synchronisation), gives every op its time on B from
the projection models (transfers: AHEAD; kernels: the roofline with
--metrics, the metrics-free kernel models otherwise; ops no model handles
keep their time on A and are listed), replays the graph on B and prints:
end-to-end time (first API call, or first GPU op start without API records,
to last GPU op) measured on A and forecast
on B, GPU-busy time per GPU, GPU time per category, the critical path on A
and on B, and the ops that moved the result most. Several targets
(--to a,b,c) or a sweep over machine parameters (--sweep link.gen=3,4,5)
give one comparison table and --png chart. --json and --html give the
result as JSON and as one self-contained HTML page.
"""

from __future__ import annotations

import argparse

from nodecast.commands import common
from nodecast.commands.report_options import add_notes_option, add_report_options, check_report_paths, emit
from nodecast.commands.transfer_options import add_transfer_options, host_memory, one_byte_given


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("forecast", help="forecast the whole application's end-to-end time on another node",
                       description=__doc__)
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, Parquet) or sample:NAME")
    common.add_machine_options(p)
    for action in p._actions:  # --to takes a list here
        if action.dest == "target":
            action.help = ("node(s) to forecast on, comma-separated (catalogue name, machine TOML file, or "
                           "GPU[xN][@HOST] composed from a data sheet; a GPU alone, without @HOST, is A's node "
                           "with that GPU: A's host kept)")
    common.add_model_option(p, common.CHAIN_DEFAULT_HELP)
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
                   help="forecasts at once on a local Dask cluster (several targets; default: 1 unless the work is large; "
                        "Dask: pip install 'nodecast[parallel]')")
    p.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="run the targets on this Dask scheduler (pip install 'nodecast[parallel]')")
    p.add_argument("--top", type=int, default=10, metavar="N", help="ops that moved the result most to list (default 10)")
    p.add_argument("--trace", dest="chrome", metavar="OUT.json",
                   help="write the measured (A) and forecast (B) timelines as one Chrome trace (Perfetto); one target")
    p.add_argument("-o", "--output", metavar="OPS.csv|.parquet",
                   help="write every op's durations and start/end on A and B; one target")
    p.add_argument("--table", metavar="FILE", help="write the per-category (one target) or comparison table "
                                                   "(.csv, .parquet or .json)")
    p.add_argument("--png", metavar="FILE", help="chart of the end-to-end forecast per target (.png, .svg, .pdf)")
    add_report_options(p, "the forecast")
    add_notes_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.fileio import check_writable
    from nodecast.workflows import export
    from nodecast.cost.ops import CostOptions
    from nodecast.workflows.targets import split_targets, target_specs
    from nodecast.report.figures import check_figure_path
    from nodecast.report.files import check_table_path

    if args.target is None:
        raise InputError("missing --to MACHINE", key="--to", hint="nodecast forecast TRACE --to MACHINE[,MACHINE...]")
    if args.copy_engines is not None and args.copy_engines < 1:
        raise InputError(f"must be at least 1 (got {args.copy_engines})", key="--copy-engines")
    if args.top < 0:
        raise InputError(f"must be at least 0 (got {args.top})", key="--top")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"must be at least 1 (got {args.jobs})", key="--jobs")
    specs = target_specs(split_targets(args.target), args.sweep)
    several = len(specs) > 1
    if several and (args.cluster is not None or (args.jobs or 1) > 1):
        from nodecast.workflows.parallel import require_dask

        require_dask(args.cluster)  # Dask, the 'parallel' extra: before the trace is read
    for path, option, check in ((args.chrome, "--trace", export.check_trace_path),
                                (args.output, "-o", export.check_ops_path), (args.table, "--table", check_table_path),
                                (args.png, "--png", check_figure_path)):
        if path:
            if several and option in ("--trace", "-o"):
                raise InputError(f"writes one target's timeline; {len(specs)} targets given", key=option,
                                 hint="Forecast one --to machine (no --sweep) to write it")
            check(path)
            check_writable(path, option)
    check_report_paths(args, {"--trace": args.chrome, "-o": args.output, "--table": args.table, "--png": args.png})
    options = CostOptions(models=tuple(m) if (m := common.parse_models(args.models)) else None,
                          metrics=common.metrics(args), one_byte_s=one_byte_given(args), host_scale=args.host_scale,
                          launch_latency_s=None if args.launch_us is None else args.launch_us * 1e-6,
                          host_memory=host_memory(args)).check()
    if several:
        return _run_targets(args, specs, options)
    return _run_one(args, specs[0], options)


def _run_one(args: argparse.Namespace, spec, options) -> int:  # noqa: ANN001
    from nodecast.workflows import export
    from nodecast.workflows.forecast import forecast, read_trace_and_api
    from nodecast.machines import resolve_source
    from nodecast.report import figures, files, terminal

    trace, api = read_trace_and_api(args.trace)
    source = resolve_source(trace, args.source, args.allow_gpu_mismatch)
    result = forecast(trace, api, source, spec.load(source), options, copy_engines_per_direction=args.copy_engines)
    del trace, api  # the outputs read the result only: the trace's columns (~200 B per GPU op) go back first
    written = emit(result, args, top=args.top)
    if args.chrome:
        written.append(export.write_chrome_trace(result, args.chrome))
    if args.output:
        written.append(export.write_ops(result, args.output))
    if args.table:
        written.append(files.write_table(files.table(result), args.table))
    if args.png:
        written.append(figures.draw(result, args.png, label=spec.label))
    for path in written:
        terminal.wrote(path)
    return 0


def _run_targets(args: argparse.Namespace, specs, options) -> int:  # noqa: ANN001
    from nodecast.workflows.forecast import read_trace_and_api
    from nodecast.workflows.targets import compare_targets
    from nodecast.report import figures, files, terminal

    trace, api = read_trace_and_api(args.trace)
    if args.jobs is None and args.cluster is None:
        from nodecast.workflows.parallel import one_at_a_time_note

        if note := one_at_a_time_note(len(specs), "forecasts"):
            terminal.said(note)
    from nodecast.report.terminal._progress import job_progress

    with job_progress(len(specs), "forecasting") as progress:  # a bar at a terminal, no line in a log
        comp = compare_targets(trace, api, specs, source=args.source, allow_gpu_mismatch=args.allow_gpu_mismatch,
                               options=options, copy_engines_per_direction=args.copy_engines, jobs=args.jobs,
                               address=args.cluster, progress=progress.advance)
    written = emit(comp, args)
    if args.table:
        written.append(files.write_table(files.table(comp), args.table))
    if args.png:
        written.append(figures.draw(comp, args.png))
    for path in written:
        terminal.wrote(path)
    return 0
