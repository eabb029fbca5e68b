"""``nodecast project TRACE --from A --to B``: per-op projected GPU times, every model side by side."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from nodecast.commands import common
from nodecast.commands.transfer_options import (add_one_byte_option, add_transfer_options, one_byte_given,
                                                transfer_options)
from nodecast.models.base import get_models, model_names
from nodecast.project import NOT_PROJECTED, TOTAL_PROJECTED, project
from nodecast.report import tables as t
from nodecast.report.words import plural
from nodecast.traces.kinds import OpKind


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("project", help="project a trace's GPU op times from node A onto node B",
                       description=__doc__)
    p.add_argument("trace", nargs="?", help="trace file or sample:NAME")
    common.add_machine_options(p)
    common.add_model_option(p)
    common.add_metrics_option(p)
    add_transfer_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="per-op table (.csv, .parquet or .json)")
    p.add_argument("--summary", metavar="FILE", help="summary table (.csv, .parquet or .json)")
    p.set_defaults(func=run)
    # --list-models works without a trace or machines.
    lp = sub.add_parser("models", help="list the projection models", description="List the registered models.")
    lp.set_defaults(func=list_models)


# add_one_byte_option and one_byte_given moved to nodecast.commands.transfer_options (imported above, so
# that `from nodecast.commands.project import add_one_byte_option` keeps working).
__all__ = ["add_one_byte_option", "one_byte_given", "register", "run"]


def list_models(args: argparse.Namespace) -> int:
    import pandas as pd

    rows = [{"model": m.name, "kind": m.kind, "baseline": "yes" if m.baseline else "", "description": m.description}
            for m in get_models(model_names())]
    t.render(pd.DataFrame(rows), "Projection models (nodecast project --models NAME,...)")
    return 0


def run(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.fileio import check_writable
    from nodecast.report.export import check_table_path, write_table

    if not args.trace:
        raise InputError("missing TRACE argument", key="project", hint="nodecast project TRACE --from A --to B")
    # Every output is checked before any work, so that a bad second path cannot
    # leave the first output written (and two lines on stderr).
    for option, out in (("-o", args.output), ("--summary", args.summary)):
        if out:
            check_table_path(out)
            check_writable(out, option)
    options = transfer_options(args)
    tr = common.trace(args.trace)
    source, target = common.machines(args, tr)
    proj = project(tr, source, target, common.parse_models(args.models), metrics=common.metrics(args), **options)
    console = t.console()
    n_sync = int(np.count_nonzero(tr["kind"] == OpKind.SYNC))
    # Synchronisations are records of the host waiting, not GPU work: say how many were set aside.
    syncs = (f" (and {plural(n_sync, 'synchronisation record')}, not projected: they are not GPU work)"
             if n_sync else "")
    console.print(f"[bold]{tr.meta.source}[/]: {plural(len(tr) - n_sync, 'GPU op')}{syncs}, "
                  f"projected {source.name} -> {target.name}", soft_wrap=True)
    summary = proj.summary()
    shown = summary.copy()
    # Per-model op counts add a column per model; show them only where a model
    # handled part of a row (else "—" in its time column says it all).
    partial = [n for n in proj.results
               if ((shown[f"{n}_ops"] != 0) & (shown[f"{n}_ops"] != shown["ops"])).any()]
    shown = shown.drop(columns=[f"{n}_ops" for n in proj.results if n not in partial])
    shown = shown.rename(columns={f"{n}_s": n for n in proj.results})
    fmts = {"ops": t.fmt_int, "bytes": t.fmt_bytes, "source_s": t.fmt_seconds,
            **dict.fromkeys(proj.results, t.fmt_seconds), **{f"{n}_ops": t.fmt_int for n in partial}}
    t.render(shown, f"GPU time on {source.name} (source_s) and projected on {target.name} per model "
             f"(— : not projected by that model; '{TOTAL_PROJECTED}' sums the ops some model projected, "
             f"'{NOT_PROJECTED}' the others; <model>_ops: ops in a model's sum where it differs)", fmts, console)
    unhandled = proj.unhandled()
    if len(unhandled):
        t.render(unhandled, "Ops no model could handle (not projected)",
                 {"ops": t.fmt_int, "source_s": t.fmt_seconds}, console)
    for note in (*source.notes, *target.notes, *proj.notes):
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    if args.output:
        print(f"wrote {write_table(proj.frame(), args.output)}", file=sys.stderr)
    if args.summary:
        print(f"wrote {write_table(summary, args.summary)}", file=sys.stderr)
    return 0
