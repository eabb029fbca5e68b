"""``nodecast roofline METRICS.csv --from A --to B --kernel NAME -o fig.png``: draw a kernel's projection.

Draws the hierarchical roofline of one kernel on the source and on the target
GPU, as in Fig. 2 of Van Lanker et al. (Euro-Par 2024): the GPU's maxima
(compute roof and the L1, L2, DRAM bandwidth lines), the kernel-specific
ceilings (eq. 3 compute ceiling, eqs. 6-8 bandwidth ceilings, dashed), the
kernel at its three operational intensities (eq. 10) and, on the target, the
projected performance interval of eq. 9 (blue area, red line at its midpoint).
All launches of the kernel are drawn as one point (counts and times summed)
unless ``--launch`` picks one. The projection is ``nodecast.workflows.kernels.kernel_roofline``;
the figure is drawn by ``nodecast.report.figures`` (``figures/roofline.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nodecast.errors import InputError
from nodecast.text import shown

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roofline", help="draw a kernel's hierarchical roofline on source and target GPUs",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics", nargs="+", metavar="METRICS.csv", help="ncu CSV export(s) of one run")
    p.add_argument("--from", dest="source", required=True, metavar="MACHINE", help="profiled node")
    p.add_argument("--to", dest="target", required=True, metavar="MACHINE", help="node to project onto")
    p.add_argument("--kernel", required=True, metavar="NAME",
                   help="kernel name, or a part of it that matches one kernel only")
    p.add_argument("--launch", type=int, default=None, metavar="K",
                   help="draw the K-th launch (0-based) instead of all launches summed")
    p.add_argument("-o", "--output", required=True, metavar="FIG", help="figure file (.png, .svg or .pdf)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.fileio import check_writable
    from nodecast.workflows.kernels import kernel_roofline
    from nodecast.machines import load_machine
    from nodecast.report import figures
    from nodecast.traces.ncu import read_ncu_csv

    out = Path(args.output)
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError(f"cannot draw a figure as {out.suffix or 'a file without extension'}", path=out,
                         hint=f"Use one of {', '.join(FIGURE_SUFFIXES)}")
    figures.require_matplotlib(out)
    check_writable(out, "-o")
    from nodecast.commands.output_paths import check_outputs

    check_outputs(args, {"-o": out})  # the metrics CSVs and machine files
    source, target = load_machine(args.source), load_machine(args.target)
    metrics = read_ncu_csv(args.metrics)
    result = kernel_roofline(metrics, source, target, args.kernel, args.launch)
    figures.draw(result, out)
    print(f"wrote {shown(out)}")
    return 0
