"""``nodecast record -o trace.sqlite -- python program.py [args]``: trace a Python GPU program with CUPTI.

The program runs in a child process with CUPTI activity tracing enabled
(kernels, copies with memory kinds, memsets, synchronizations, runtime and
driver API calls with correlation ids, unified-memory migrations). The trace
is written as SQLite in the tables and columns of an Nsight Systems export,
so every nodecast command that reads nsys exports reads it. Needs an NVIDIA
GPU and ``pip install '.[gpu]'`` (in the checkout). The exit code is the program's
(2 when tracing could not start, with nothing written).
"""

from __future__ import annotations

import argparse

from nodecast.record import record


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``record`` subcommand."""
    p = sub.add_parser("record", help="trace a Python GPU program with CUPTI into an nsys-style SQLite file",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="trace file to write (SQLite, e.g. trace.sqlite)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the program: python [options] program.py [args], python -m module [args], or program.py [args]")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Record, print one line (``nodecast.report.terminal``), return the program's exit code."""
    from nodecast.commands.output_paths import check_outputs
    from nodecast.report import terminal

    # The program and its arguments may name files it reads: the trace must not replace one.
    check_outputs(args, {"-o": args.output}, args.command, from_args=False)
    result = record(args.command, args.output)
    terminal.render(result, output=args.output)
    return result.exit_code
