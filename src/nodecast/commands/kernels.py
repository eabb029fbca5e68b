"""``nodecast kernels METRICS.csv [MORE.csv ...] --from A --to B``: project GPU kernels onto another GPU.

Reads Nsight Compute CSV exports (one wide ``--page raw`` file, or several
files of one metric each, joined by kernel name and occurrence) and projects
every launch with the hierarchical roofline model (Van Lanker et al.,
Euro-Par 2024) and the kernel baselines. Prints one row per kernel name and a
total row; kernels whose short names coincide are numbered (#1, #2). ``-o``
writes one row per launch with the full kernel name, its label and every
intermediate quantity.
``--print-ncu-command`` prints the ncu command that collects the metrics.
"""

from __future__ import annotations

import argparse


from nodecast.errors import InputError


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
    from nodecast.fileio import check_writable
    from nodecast.machines import load_machine
    import pandas as pd

    from nodecast.models.roofline import project_metrics, short_kernel_name
    from nodecast.report.words import plural
    from nodecast.models.sass import SassComparison
    from nodecast.report import tables as t
    from nodecast.report.export import check_table_path, write_table
    from nodecast.traces.ncu import NCU_COMMAND, read_ncu_csv

    if args.print_ncu_command:
        print(NCU_COMMAND)
        return 0
    _check(args)
    if args.output:  # every output is checked before any work, so a bad one leaves nothing behind
        check_table_path(args.output)
        check_writable(args.output, "-o")
    models = None
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        if not models:
            raise InputError("empty model list", key="--models")
    source, target = load_machine(args.source), load_machine(args.target)
    metrics = read_ncu_csv(args.metrics)
    sass = (SassComparison.from_files(args.sass_source, args.sass_target, args.sass_counts)
            if args.sass_source else None)
    proj = project_metrics(metrics, source, target, models, sass)
    launches = proj.launches()  # computed before anything is written or printed
    console = t.console()
    console.print(f"[bold]{plural(len(metrics), 'kernel launch', 'kernel launches')}[/] "
                  f"({plural(len(metrics.kernel_names), 'kernel')}) "
                  f"profiled on {source.name} ({source.gpu.model}), projected onto {target.name} "
                  f"({target.gpu.model})")
    if args.per_launch:
        cols = ["label", "occurrence", "source_s"]
        if proj.roofline is not None:
            cols += ["bound_target", "roofline_low_s", "roofline_high_s"]
        cols += [f"{n}_s" for n in proj.results]
        table = launches[cols].copy()
    else:
        table = proj.summary().drop(columns="kernel")
    total = {k: v for k, v in proj.total().items() if k in table.columns}
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True).rename(columns={"label": "kernel"})
    numbered = sorted({lab for full, lab in zip(launches["kernel"], launches["label"], strict=True)
                       if lab != short_kernel_name(full)})
    if "bound_target" in table:
        table = table.rename(columns={"bound_target": "bound"})
    if "roofline_low_s" in table:
        lo, hi = table.pop("roofline_low_s"), table.pop("roofline_high_s")
        at = list(table.columns).index("bound") + 1 if "bound" in table else len(table.columns)
        table.insert(at, "interval (roofline)", [f"{t.fmt_seconds(a)} – {t.fmt_seconds(b)}" for a, b in zip(lo, hi, strict=True)])
    for col in ("bound", "occurrence"):
        if col in table:
            table[col] = table[col].astype(object).where(table["kernel"] != "total", "")
    fmts = {c: t.fmt_seconds for c in table.columns if c.endswith("_s")}
    fmts["launches"] = t.fmt_int
    t.render(table, f"Kernel time on {source.name} (source_s, measured under ncu) and projected on "
             f"{target.name} per model (<model>_s; sums over launches; bound: the largest term on the target)",
             fmts, console)
    if numbered:
        console.print(f"  note: different kernels whose short names coincide are numbered ({', '.join(numbered)}) "
                      "in order of first launch; -o writes their full names (columns kernel and label)",
                      highlight=False, markup=False, soft_wrap=True)
    for note in proj.notes():
        console.print(f"  note: {note}", highlight=False, markup=False, soft_wrap=True)
    if args.target_metrics:
        _report_against_target(args, metrics, source, target, models, console)
    if args.output:
        write_table(launches, args.output)
        console.print(f"wrote {plural(len(launches), 'launch', 'launches')} to {args.output}")
    return 0


def _report_against_target(args: argparse.Namespace, metrics, source, target, models, console) -> None:  # noqa: ANN001
    """MAPE and WMAPE of every kernel model against the durations measured on the target (same program)."""
    from nodecast.evaluate import evaluate
    from nodecast.report import tables as t
    from nodecast.report.words import plural
    from nodecast.traces.ncu import read_ncu_csv, trace_from_metrics

    measured = read_ncu_csv(args.target_metrics)
    ev = evaluate(trace_from_metrics(metrics), trace_from_metrics(measured), source, target,
                  models, kind="kernel" if models is None else None, metrics=metrics)
    al = ev.alignment
    table = ev.table()[["model", "MAPE", "all", "ops"]].rename(columns={"all": "WMAPE"})
    table.insert(1, "type", ["reference" if m == "unchanged" else
                             "baseline" if m in {x.name for x in ev.projection.models if x.baseline} else "model"
                             for m in table["model"]])
    console.print(f"{plural(len(ev.actual_s), 'launch', 'launches')} paired with the target run by kernel name and "
                  f"occurrence; unmatched: {len(al.unmatched_a)} source, {len(al.unmatched_b)} target", soft_wrap=True)
    t.render(table, f"Error against the launches measured on {target.name}",
             {"MAPE": t.fmt_pct, "WMAPE": t.fmt_pct, "ops": t.fmt_int}, console,
             caption="MAPE = 100 * mean(|A - P| / A) over launches (the roofline paper's metric); "
                     "WMAPE weights by time; 'unchanged' = the source time.")
