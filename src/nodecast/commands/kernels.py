"""``nodecast kernels METRICS.csv [MORE.csv ...] --from A --to B``: project GPU kernels onto another GPU.

Reads Nsight Compute CSV exports (one wide ``--page raw`` file, or several
files of one metric each, joined by kernel name and occurrence) and projects
every launch with the hierarchical roofline model (Van Lanker et al.,
Euro-Par 2024) and the kernel baselines. Prints one row per kernel name and a
total row; kernels whose short names coincide are numbered (#1, #2). ``-o``
writes one row per launch with the full kernel name, its label and every
intermediate quantity.
``--json`` writes the headline numbers and the table, ``--html`` one page
with all of it (the work is done by ``nodecast.workflows.kernels``, the output by
``nodecast.report``). ``--print-ncu-command`` prints the ncu command that
collects the metrics.
"""

from __future__ import annotations

import argparse

from nodecast.commands.report_options import add_report_options
from nodecast.errors import InputError
from nodecast.text import shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kernels", help="project GPU kernels profiled with Nsight Compute onto another GPU",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics", nargs="*", metavar="METRICS.csv", help="ncu CSV export(s) of one run")
    p.add_argument("--from", dest="source", metavar="MACHINE",
                   help="node the kernels were profiled on (catalogue name or TOML path)")
    p.add_argument("--to", dest="target", metavar="MACHINE", help="node to project onto")
    p.add_argument("--models", metavar="M1,M2", default=None,
                   help="kernel models to run (default: roofline and the kernel baselines)")
    p.add_argument("--sass-source", metavar="FILE", help="cuobjdump -sass / nvdisasm text of the source build")
    p.add_argument("--sass-target", metavar="FILE", help="the same for the target build")
    p.add_argument("--sass-counts", metavar="CSV",
                   help="per-instruction thread-execution counts of the source run "
                        "(columns function, pc_offset, threads_executed[, launch])")
    p.add_argument("-o", "--output", metavar="FILE", help="per-launch table (.csv, .parquet or .json)")
    add_report_options(p, "the projection")
    p.add_argument("--per-launch", action="store_true", help="print one row per launch instead of per kernel")
    p.add_argument("--target-metrics", metavar="CSV", nargs="+", default=None,
                   help="ncu CSV of the same program run on the target: report each model's MAPE against it")
    p.add_argument("--print-ncu-command", action="store_true",
                   help="print the Nsight Compute command that collects the metrics, and exit")
    p.set_defaults(func=run)


def _check(args: argparse.Namespace) -> None:
    if not args.metrics:
        raise InputError("missing METRICS.csv argument", key="kernels",
                         hint="nodecast kernels METRICS.csv --from A --to B (collect with --print-ncu-command)")
    for opt in ("source", "target"):
        if not getattr(args, opt):
            raise InputError(f"missing --{'from' if opt == 'source' else 'to'} MACHINE", key="kernels",
                             hint="Name a catalogue machine, a machine TOML file or a GPU data sheet (GPU[xN][@HOST], "
                                  "nodecast machines list); Nsight Compute CSVs do not record the GPU's name")
    if bool(args.sass_source) != bool(args.sass_target):
        raise InputError("--sass-source and --sass-target go together", key="--sass-source")
    if args.sass_counts and not args.sass_source:
        raise InputError("--sass-counts needs --sass-source and --sass-target", key="--sass-counts")


def run(args: argparse.Namespace) -> int:
    import sys

    from nodecast.commands.report_options import STDOUT, check_report_paths, emit
    from nodecast.fileio import check_writable
    from nodecast.workflows.kernels import project_kernel_metrics
    from nodecast.machines import load_machine
    from nodecast.models.sass import SassComparison
    from nodecast.report import files
    from nodecast.words import plural
    from nodecast.traces.ncu import NCU_COMMAND, read_ncu_csv

    if args.print_ncu_command:
        print(NCU_COMMAND)
        return 0
    _check(args)
    if args.output:  # every output is checked before any work, so a bad one leaves nothing behind
        files.check_table_path(args.output)
        check_writable(args.output, "-o")
    check_report_paths(args, {"-o": args.output})
    models = None
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        if not models:
            raise InputError("empty model list", key="--models")
    source, target = load_machine(args.source), load_machine(args.target)
    metrics = read_ncu_csv(args.metrics)
    sass = (SassComparison.from_files(args.sass_source, args.sass_target, args.sass_counts)
            if args.sass_source else None)
    measured = read_ncu_csv(args.target_metrics) if args.target_metrics else None
    result = project_kernel_metrics(metrics, source, target, models, sass, measured, files=args.metrics)
    written = emit(result, args, per_launch=args.per_launch)
    out = sys.stderr if args.json == STDOUT else sys.stdout  # a JSON document on stdout stays clean
    if args.output:
        files.write_table(result.launches, args.output)
        print(f"wrote {plural(len(result.launches), 'launch', 'launches')} to {shown(args.output)}", file=out)
    for path in written:
        print(f"wrote {shown(path)}", file=out)
    return 0
