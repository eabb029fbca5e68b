"""``nodecast fit-kernels``: fit the learned kernel model on cross-GPU measurements, leave-one-GPU-out.

Examples::

    nodecast fit-kernels --cross-gpu ../shared/data/cross-gpu --kernel-zoo ../shared/data/kernel-zoo -o model.json
    nodecast fit-kernels my-sweep-a100.csv my-sweep-h100.csv my-sweep-l40s.csv -o ours.json
    NODECAST_KERNEL_MODEL=ours.json nodecast forecast run.sqlite --to h100-sxm5-80gb

Reads op tables (docs/inputs.md, "Op tables": the same ops measured on
several GPUs, paired by op, dtype and shape) and the shared corpora, prints
each GPU's errors as predicted by a fit that never saw it (and the interval's
coverage), then fits on everything and writes the parameter file (JSON).
nodecast uses the packaged parameter file unless ``NODECAST_KERNEL_MODEL``
names another.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nodecast.commands.report_options import add_report_options
from nodecast.errors import InputError
from nodecast.text import shown


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``fit-kernels`` subcommand."""
    p = sub.add_parser("fit-kernels", help="fit the learned kernel model on cross-GPU measurements (op tables, "
                                           "the shared corpora), leave-one-GPU-out",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tables", nargs="*", metavar="OP_TABLE", help="op tables (.csv or .parquet) of your own GPUs")
    p.add_argument("--cross-gpu", metavar="DIR", help="the shared cross-GPU corpora (../shared/data/cross-gpu)")
    p.add_argument("--kernel-zoo", metavar="DIR", help="the shared kernel zoo (../shared/data/kernel-zoo)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the parameter file (.json)")
    add_report_options(p, "the fit's scores", html=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from nodecast.commands.report_options import STDOUT, check_report_paths, emit
    from nodecast.fileio import check_writable
    from nodecast.fit.workflow import fit_kernel_model
    import time

    from nodecast.report.terminal._progress import elapsed

    for option, folder in (("--cross-gpu", args.cross_gpu), ("--kernel-zoo", args.kernel_zoo)):
        if folder is not None and not Path(folder).is_dir():
            raise InputError("not a folder", path=folder, key=option,
                             hint="Give ../shared/data/cross-gpu or ../shared/data/kernel-zoo")
    if args.output:
        if Path(args.output).suffix.lower() != ".json":
            raise InputError("the parameter file is JSON: give a .json name", path=args.output, key="-o")
        check_writable(args.output, "-o")
    check_report_paths(args, {"-o": args.output}, args.tables)
    t0 = time.perf_counter()

    def say(message: str) -> None:  # a line per step on stderr: the fit takes a minute or two on the shared corpora
        print(f"[{elapsed(time.perf_counter() - t0)}] {message}", file=sys.stderr, flush=True)

    fit = fit_kernel_model([Path(t) for t in args.tables], Path(args.cross_gpu) if args.cross_gpu else None,
                           Path(args.kernel_zoo) if args.kernel_zoo else None,
                           Path(args.output) if args.output else None, say)
    written = emit(fit, args)
    out = sys.stderr if args.json == STDOUT else sys.stdout
    for path in written:
        print(f"wrote {shown(path)}", file=out)
    return 0
