"""``nodecast collectives --to NODE[,NODE...]``: NCCL collectives per message size on one node or several.

For every message size (nccl-tests' "size", powers of two from --sizes), the
time NCCL's own cost model gives on each node's links, the algorithm and
protocol it chooses, and nccl-tests' algbw and busbw, nodes side by side::

    nodecast collectives --to dgx-a100,h100-sxm5-server --op all_reduce --sizes 8B:8GiB --dtype bf16

``--gpus N`` runs the collective on GPUs 0 .. N-1 of each node (default: all
of them); ``--json``, ``--png`` and ``--html`` write the table, a
busbw-vs-size figure and a page. The work is done by
``nodecast.workflows.collectives``, the output by ``nodecast.report``.
"""

from __future__ import annotations

import argparse

from nodecast.commands.report_options import add_report_options, check_report_paths, emit
from nodecast.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``collectives`` subcommand."""
    from nodecast.workflows.collectives import DEFAULT_DTYPE, DEFAULT_OP, DEFAULT_SIZES

    p = sub.add_parser("collectives", help="NCCL collectives per message size on one node or several (nccl-tests' "
                                           "algbw and busbw, NCCL's algorithm and protocol)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--to", dest="target", required=True, metavar="NODE[,NODE...]",
                   help="catalogue names, machine files or GPU[xN][@HOST] specs, comma-separated (nodecast machines "
                        "list)")
    p.add_argument("--gpus", type=int, default=None, metavar="N",
                   help="GPUs in the group, 2 or more (default: all of each node)")
    p.add_argument("--op", default=DEFAULT_OP, metavar="OP",
                   help=f"all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or send_recv "
                        f"(default: {DEFAULT_OP})")
    p.add_argument("--sizes", default=DEFAULT_SIZES, metavar="LO:HI",
                   help=f"message sizes: powers of two from LO to HI, or a comma list; binary units B, KiB, MiB, GiB "
                        f"(default: {DEFAULT_SIZES})")
    p.add_argument("--dtype", default=DEFAULT_DTYPE, metavar="TYPE",
                   help=f"element type: int8, fp8, fp16, bf16, fp32 or fp64 (default: {DEFAULT_DTYPE})")
    add_report_options(p, "the sizes")
    p.add_argument("--png", metavar="FILE", help="busbw against message size, one line per node (.png, .svg, .pdf)")
    p.set_defaults(func=run)


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise InputError("no node given", key="--to", hint="e.g. --to dgx-a100,h100-sxm5-server")
    if len(set(names)) != len(names):
        raise InputError(f"a node is listed twice in {text!r}", key="--to")
    return names


def run(args: argparse.Namespace) -> int:
    """Check every input and output, evaluate, print, write the files asked for."""
    from nodecast.machines import load_machine
    from nodecast.models.curves import parse_sizes
    from nodecast.report import figures
    from nodecast.report.terminal import wrote
    from nodecast.workflows.collectives import collectives, parse_dtype, parse_op

    names = _names(args.target)
    op, dtype, sizes = parse_op(args.op), parse_dtype(args.dtype), parse_sizes(args.sizes)
    if args.png:
        figures.check_figure_path(args.png)
    check_report_paths(args, {"--png": args.png})
    machines = [load_machine(name) for name in names]
    result = collectives(machines, op, sizes, dtype, args.gpus)
    written = emit(result, args)
    if args.png:
        written.append(figures.draw(result, args.png))
    wrote(*written)
    return 0
