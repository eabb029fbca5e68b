"""``nodecast curves``: projected effective bandwidth vs copy size, per model and machine.

Example::

    nodecast curves --machines titan,summit -o curves.png --csv curves.csv

prints a table of bandwidths at 1 KiB, 64 KiB, 1 MiB, 64 MiB and 1 GiB and,
with ``-o``, draws every size from 1 B to 1 GiB (AHEAD Figs. 9-10).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from nodecast.errors import InputError
from nodecast.fileio import check_writable
from nodecast.text import shown
from nodecast.models.curves import (
    DEFAULT_ONE_BYTE_S,
    DEFAULT_ONE_BYTE_SOURCE,
    DEFAULT_SIZES,
    bandwidth_curves,
    parse_classes,
    parse_sizes,
)

#: Largest --one-byte-us accepted, µs: 1 s for one byte is already a million times any measured copy.
MAX_ONE_BYTE_US = 1e6


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``curves`` subcommand."""
    p = subparsers.add_parser(
        "curves",
        help="effective bandwidth vs copy size per model and machine (AHEAD Figs. 9-10)",
        description=(
            "Evaluate the transfer models on one copy of each size and class and report the bandwidth "
            "n / T(n) they project (GB/s, 1 GB = 1e9 B). The 1-byte cost L+O comes from each machine's "
            "file, else from the --from machine's file, else --one-byte-us."
        ),
    )
    p.add_argument("--machines", required=True, metavar="M1,M2",
                   help="catalogue names or machine files, comma-separated")
    p.add_argument("--from", dest="source", metavar="MACHINE",
                   help="source machine whose measured 1-byte costs are used where a machine has none "
                        "(default: the first of --machines)")
    p.add_argument("--classes", metavar="C1,C2",
                   help="transfer classes (default: htod_pinned,dtoh_pinned,dtod,htod_pageable,dtoh_pageable)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, metavar="LO:HI",
                   help="powers of two from LO to HI, or a comma list; binary units Ki/Mi/Gi (default: 1:1Gi)")
    p.add_argument("--models", metavar="NAME,...", help="models to evaluate (default: every transfer model)")
    p.add_argument("--one-byte-us", type=float, default=DEFAULT_ONE_BYTE_S * 1e6, metavar="US",
                   help=f"1-byte cost (µs) where no machine file measures one (default: "
                        f"{DEFAULT_ONE_BYTE_S * 1e6:g}, the {DEFAULT_ONE_BYTE_SOURCE}; above 0, at most 1e6)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the figure (.png, .svg or .pdf)")
    p.add_argument("--csv", metavar="FILE", help="write every point to a .csv file (SI units)")
    y_axis = p.add_mutually_exclusive_group()
    y_axis.add_argument("--log-y", dest="linear_y", action="store_false",
                        help="logarithmic bandwidth axis in the figure (the default: a 6 GB/s link stays readable "
                             "beside a 450 GB/s one)")
    y_axis.add_argument("--linear-y", dest="linear_y", action="store_true",
                        help="linear bandwidth axis from 0, as AHEAD's Figs. 9-10")
    p.set_defaults(linear_y=False)
    p.set_defaults(func=run)


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def run(args: argparse.Namespace) -> int:
    """Compute the curves, print the table, write the requested files."""
    from nodecast.machines import load_machine
    from nodecast.models.registry import model_names
    from nodecast.report import figures, terminal
    from nodecast.report.files.curves import write_csv

    check_outputs(args)
    names = _split(args.machines)
    if not names:
        raise InputError("no machine given", key="--machines", hint="e.g. --machines titan,summit")
    if len(set(names)) != len(names):
        raise InputError(f"a machine is listed twice in {args.machines!r}", key="--machines")
    machines = [load_machine(n) for n in names]
    source = load_machine(args.source) if args.source else machines[0]
    classes = parse_classes(args.classes) if args.classes else None
    sizes = parse_sizes(args.sizes)
    models = None
    if args.models:
        models = _split(args.models)
        known = model_names("transfer")
        for m in models:
            if m not in known:
                raise InputError(f"unknown transfer model {m!r}", key="--models", hint=f"Known: {', '.join(known)}")
    one_byte_us = args.one_byte_us
    # A 1-byte copy costs a few µs (launch + latency); 0 or 1e308 µs would draw curves of no copy that exists.
    if not (math.isfinite(one_byte_us) and 0 < one_byte_us <= MAX_ONE_BYTE_US):
        raise InputError(
            f"must be a number of µs above 0 and at most {MAX_ONE_BYTE_US:g} (1 s) (got {one_byte_us:g})",
            key="--one-byte-us",
            hint="Give the cost of a 1-byte copy in µs, typically 1 to 20",
        )
    if one_byte_us == DEFAULT_ONE_BYTE_S * 1e6:
        label = f"--one-byte-us default: {DEFAULT_ONE_BYTE_SOURCE}"
    else:
        label = "--one-byte-us"

    curves = bandwidth_curves(
        machines, source=source, classes=classes, sizes=sizes, models=models,
        one_byte_fallback_s=one_byte_us * 1e-6, one_byte_fallback_label=label,
    )
    terminal.render(curves)
    if args.csv:
        write_csv(curves, args.csv)
        print(f"wrote {shown(args.csv)}")
    if args.output:
        figures.draw(curves, args.output, log_y=not args.linear_y)
        print(f"wrote {shown(args.output)}")
    return 0


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse a bad -o or --csv (extension, folder, permission) before any work, so nothing is half-written."""
    if args.output:
        from nodecast.report.figures.curves import FORMATS

        suffix = Path(args.output).suffix.lower()
        if suffix not in FORMATS:
            raise InputError(f"unknown figure format {suffix or '(none)'}", path=args.output, key="-o",
                             hint=f"Name the file with one of {', '.join(FORMATS)}")
        from nodecast.report.figures import require_matplotlib

        require_matplotlib(args.output)
        check_writable(args.output, "-o")
    if args.csv:
        if Path(args.csv).suffix.lower() != ".csv":
            raise InputError(f"unknown table format {Path(args.csv).suffix or '(none)'}", path=args.csv,
                             key="--csv", hint="Name the file with .csv")
        check_writable(args.csv, "--csv")
    from nodecast.commands.output_paths import check_outputs as check_against_inputs

    check_against_inputs(args, {"-o": args.output, "--csv": args.csv})  # --machines and --from files
