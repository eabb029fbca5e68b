"""``nodecast project TRACE --from A --to B``: per-op projected GPU times, every model side by side."""

from __future__ import annotations

import argparse

from nodecast.commands import common
from nodecast.commands.report_options import add_notes_option, add_report_options, check_report_paths, emit
from nodecast.commands.transfer_options import (add_one_byte_option, add_transfer_options, one_byte_given,
                                                transfer_options)
from nodecast.cost.project import project


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
    add_report_options(p, "the projection")
    add_notes_option(p)
    p.set_defaults(func=run)
    # --list-models works without a trace or machines.
    lp = sub.add_parser("models", help="list the projection models", description="List the registered models.")
    lp.set_defaults(func=list_models)


# add_one_byte_option and one_byte_given moved to nodecast.commands.transfer_options (imported above, so
# that `from nodecast.commands.project import add_one_byte_option` keeps working).
__all__ = ["add_one_byte_option", "one_byte_given", "register", "run"]


def list_models(args: argparse.Namespace) -> int:
    from nodecast.cost.project import model_list
    from nodecast.report import terminal

    terminal.render(model_list())
    return 0


def run(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.fileio import check_writable
    from nodecast.report import files, terminal

    if not args.trace:
        raise InputError("missing TRACE argument", key="project", hint="nodecast project TRACE --from A --to B")
    # Every output is checked before any work, so that a bad second path cannot
    # leave the first output written (and two lines on stderr).
    for option, out in (("-o", args.output), ("--summary", args.summary)):
        if out:
            files.check_table_path(out)
            check_writable(out, option)
    check_report_paths(args, {"-o": args.output, "--summary": args.summary})
    options = transfer_options(args)
    tr = common.trace(args.trace)
    source, target = common.machines(args, tr)
    proj = project(tr, source, target, common.parse_models(args.models), metrics=common.metrics(args), **options)
    written = emit(proj, args)
    if args.output:
        written.append(files.write_table(proj.frame(), args.output))
    if args.summary:
        written.append(files.write_table(files.table(proj), args.summary))
    for path in written:
        terminal.wrote(path)
    return 0
