"""``nodecast machines list|show|diff|template``: the machine catalogue, GPU data sheets, hosts, machine files.

The results come from ``nodecast.machines.results`` (SI units) and are
printed by ``nodecast.report.terminal`` (``terminal/machines.py``).
Tables print GB/s and GB with 1 GB = 1e9 B and TFLOP/s with 1 TFLOP/s =
1e12 FLOP/s; ``--json`` prints the SI numbers themselves. A MACHINE is a
catalogue name, a machine file, or a node composed from a GPU data sheet and
a host: ``GPU[xN][@HOST]`` (``rtx-3090``, ``a100-sxm4-80gbx8@epyc-7742-2s``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nodecast.machines import load_machine
from nodecast.machines.results import catalogue, machine_diff, machine_view
from nodecast.text import shown

_MACHINE_HELP = "catalogue name, machine TOML file, or GPU[xN][@HOST] composed from a data sheet"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("machines", help="list, show and compare machines (catalogue names or TOML files)",
                       description=__doc__)
    msub = p.add_subparsers(dest="machines_command", metavar="{list,show,diff,template}")
    msub.required = True

    ls = msub.add_parser("list", help="the catalogue machines, GPU data sheets and hosts, one row each")
    ls.add_argument("--json", action="store_true",
                    help="print {machines, gpus, hosts} as JSON (SI units)")
    ls.set_defaults(func=run_list)

    sh = msub.add_parser("show", help="every field of one machine with its source, its GPU's limits, links and routes")
    sh.add_argument("machine", metavar="MACHINE", help=_MACHINE_HELP)
    sh.add_argument("--json", action="store_true", help="print the summary as JSON (SI units)")
    sh.set_defaults(func=run_show)

    df = msub.add_parser("diff", help="compare two machines side by side, with the ratio B/A")
    df.add_argument("a", metavar="A", help=_MACHINE_HELP)
    df.add_argument("b", metavar="B", help=_MACHINE_HELP)
    df.add_argument("--json", action="store_true", help="print the rows as JSON (SI units)")
    df.set_defaults(func=run_diff)

    tp = msub.add_parser("template", help="print or write a documented machine file that loads as is")
    tp.add_argument("--gpu", metavar="KEY", help="GPU data sheet key (default: an H100 SXM5)")
    tp.add_argument("--host", metavar="KEY", help="host key (default: nodecast's default host)")
    tp.add_argument("--count", type=int, default=1, metavar="N", help="GPUs in the node (default 1)")
    tp.add_argument("-o", "--output", metavar="FILE", help="write the template to FILE (.toml) instead of printing it")
    tp.set_defaults(func=run_template)


def _print_json(result: Any) -> None:
    from nodecast.report.files import dumps

    print(dumps(result.as_dict()))


def run_list(args: argparse.Namespace) -> int:
    from nodecast.report import terminal

    result = catalogue()
    if args.json:
        _print_json(result)
        return 0
    terminal.render(result)
    for err in result.unreadable:  # a damaged shipped sheet is nodecast's bug, not the user's: list the rest and say so
        print(f"nodecast: warning: sheet left out: {err}", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from nodecast.report import terminal

    result = machine_view(load_machine(args.machine))
    if args.json:
        _print_json(result)
        return 0
    terminal.render(result)
    return 0


def run_diff(args: argparse.Namespace) -> int:
    from nodecast.report import terminal

    result = machine_diff(load_machine(args.a), load_machine(args.b))
    if args.json:
        _print_json(result)
        return 0
    terminal.render(result)
    return 0


# ---------------------------------------------------------------- template


def run_template(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.machines.compose import MAX_SPEC_GPUS
    from nodecast.machines.template import machine_template

    if not 1 <= args.count <= MAX_SPEC_GPUS:
        raise InputError(f"must be 1 to {MAX_SPEC_GPUS} (got {args.count})", key="--count")
    if args.output:
        from nodecast.fileio import atomic_path, check_writable

        if not args.output.endswith(".toml"):
            raise InputError("a machine file ends in .toml", path=args.output, key="-o", hint="e.g. -o my-node.toml")
        check_writable(args.output, "-o")
        from nodecast.commands.output_paths import check_outputs

        check_outputs(args, {"-o": args.output}, [args.gpu, args.host], from_args=False)  # sheet and host files
    text = machine_template(args.gpu, args.host, args.count)
    if not args.output:
        print(text, end="")
        return 0
    with atomic_path(args.output) as tmp:
        tmp.write_text(text)
    print(f"wrote {shown(args.output)}", file=sys.stderr)
    return 0
