"""``nodecast simulate``: simulate a task-based runtime (StarPU-like) on a hybrid node.

Thin layer over ``nodecast.runtime``: parse the options into a ``SimSetup``
(``nodecast.runtime.setup``: platform and kernel models), a task graph and
runtime options, run, and hand the result to ``nodecast.report``.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from nodecast.errors import InputError
from nodecast.fileio import check_suffix, check_writable
from nodecast.runtime.schedulers import SCHEDULERS
from nodecast.text import shown

_UNITS = {"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate a task-based runtime (StarPU over SimGrid, in Python) on a hybrid node",
        description=(
            "Simulate tiled Cholesky or LU (or your own DAG file) scheduled by a StarPU-like runtime on a node "
            "described by StarPU's calibration (platform XML, bus and kernel models) or by a nodecast machine. "
            "Prints makespan and GFlop/s; writes a Chrome trace, a Gantt chart, a size sweep plot, a comparison "
            "with StarPU+SimGrid's own predictions, or all of it as one HTML page (--html)."
        ),
    )
    # NOTE: argparse (before Python 3.13) reads "-2GB" or "-1e9" as an unknown option, so that
    # "--gpu-memory -2GB" ends in "expected one argument". No simulate option starts with a digit:
    # any "-<digit>..." or "-.<digit>..." word is a value, as Python 3.13's argparse reads it, and
    # reaches nodecast's own check.
    p._negative_number_matcher = re.compile(r"-\.?\d")
    p.add_argument("app", nargs="?", choices=("cholesky", "lu"), help="built-in application (or use --dag)")
    p.add_argument("--dag", type=Path, help="task graph file (JSON, see nodecast.graph.taskgraph)")
    g = p.add_argument_group("problem")
    g.add_argument("--size", type=int, help="matrix size (elements per side)")
    g.add_argument("--sizes", help="size sweep: N1,N2,... or START:STOP:STEP (inclusive)")
    g.add_argument("--block-size", type=int, default=960, help="tile size (default 960, as in the paper)")
    g.add_argument("--precision", choices=("single", "double"), default="single")
    g = p.add_argument_group("node and calibration")
    g.add_argument("--starpu-dir", type=Path, help="StarPU 'sampling' folder with bus/ and codelets/45/ (default $NODECAST_STARPU_DIR)")
    g.add_argument(
        "--starpu-machine",
        help="calibrated machine name in that folder (e.g. attila); with --compare-reference, compare only that machine's rows "
        "(default: every row, each on its own machine)",
    )
    g.add_argument("--platform", type=Path, help="a StarPU *.platform.xml / *.platform.v4.xml to use instead")
    g.add_argument("--machine", help="build the platform from a nodecast machine (catalogue name or TOML file)")
    g.add_argument("--kernel-time", action="append", default=[], metavar="KERNEL=SECONDS", help="duration for a kernel the models lack")
    g.add_argument(
        "--roofline-missing",
        action="store_true",
        help="GPU kernels without a model get the roofline time max(FLOP / FMA peak, bytes / DRAM bandwidth) (a lower bound)",
    )
    g.add_argument(
        "--kernels-measured-on",
        metavar="MACHINE",
        help="machine (catalogue name or TOML) whose GPU StarPU's kernel models were measured on: their times are "
        "scaled to the simulated GPU by the roofline ratio",
    )
    g.add_argument(
        "--roofline-gpu",
        metavar="MACHINE",
        help="machine (catalogue name or TOML) whose GPU peaks --roofline-missing and --kernels-measured-on use for the "
        "simulated GPU (default: --machine)",
    )
    g = p.add_argument_group("what-ifs")
    g.add_argument("--gpus", type=int, help="number of GPUs (fewer: drop the last ones; more: copies of existing ones)")
    g.add_argument("--gpu-memory", help="memory per GPU, e.g. 2GB or 3000MiB")
    g.add_argument("--bandwidth-scale", type=float, help="multiply link bandwidths by this factor")
    g.add_argument("--bandwidth-links", help="regular expression selecting the links to scale (default: all)")
    g = p.add_argument_group("runtime")
    # The registry's names: a new policy shows here by itself.
    names = ", ".join(f"{name} (default)" if name == "dmda" else name for name in SCHEDULERS)
    g.add_argument("--scheduler", help=f"{names}; a comma list sweeps (or filters --compare-reference rows)")
    g.add_argument("--workers", choices=("gpus", "all"), default="gpus", help="gpus: CPUs only drive GPUs; all: CPUs compute too")
    g.add_argument("--ncpus", type=int, help="CPU workers with --workers all (default: cores minus one per GPU)")
    g.add_argument("--pipeline", type=int, default=2, help="kernels queued ahead on a GPU (0: synchronous)")
    g.add_argument("--no-prefetch", action="store_true", help="do not prefetch inputs when a task is assigned")
    g.add_argument("--no-overheads", action="store_true", help="drop the runtime overheads of Table 2")
    g.add_argument("--sharing", choices=("maxmin", "cm02"), default="maxmin", help="bandwidth sharing (see nodecast.engine.network)")
    g.add_argument("--kernel-times", choices=("mean", "normal", "histogram"), default="mean")
    g.add_argument("--samples", type=Path, help="per-execution samples CSV for --kernel-times histogram")
    g.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("outputs")
    g.add_argument("--json", type=Path, help="write the result as JSON: a run's summary, a sweep's rows, or the comparison (headline and rows)")
    g.add_argument("--trace", type=Path, help="write the schedule as Chrome-trace JSON (open in Perfetto)")
    g.add_argument("--gantt", type=Path, help="write a Gantt chart (PNG)")
    g.add_argument("--csv", type=Path, help="write the sweep or comparison table (CSV)")
    g.add_argument("--plot", type=Path, help="write the GFlop/s-versus-size plot of a sweep (PNG)")
    g.add_argument("--html", type=Path, metavar="REPORT.html",
                   help="write a self-contained HTML report (makespan and GFlop/s first, tables, Gantt chart or size sweep)")
    g.add_argument(
        "--compare-reference",
        nargs="?",
        const="",
        metavar="CSV",
        help="run every row of StarPU+SimGrid's reference CSV and compare (default <starpu-dir>/../reference/<machine>.csv)",
    )
    g.add_argument("--max-blocks", type=int, help="with --compare-reference, skip rows with more blocks")
    g = p.add_argument_group("sweeps in parallel (Dask: pip install 'nodecast[parallel]')")
    g.add_argument(
        "--jobs",
        type=int,
        help=(
            "simulations at once for a sweep or comparison, on a local Dask cluster "
            "(default: one per CPU core when the runs hold 100,000 tasks or more in all, else 1: one at a time here)"
        ),
    )
    g.add_argument("--cluster", metavar="ADDRESS", help="run them on an existing Dask scheduler instead, e.g. tcp://head:8786")
    p.set_defaults(func=run)


# --------------------------------------------------------------------- helpers
def _parse_bytes(text: str) -> float:
    """Bytes in ``--gpu-memory`` (e.g. 2GB, 3000MiB, 2e9): a finite number > 0, or InputError."""
    hint = "Use e.g. 2GB, 3000MiB or 2e9"
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise InputError(f"cannot read a size from {text!r}", key="--gpu-memory", hint=hint)
    try:
        value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    except ValueError:
        raise InputError(f"cannot read a size from {text!r}", key="--gpu-memory", hint=hint) from None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"must be > 0 bytes (got {text!r})", key="--gpu-memory", hint=hint)
    return value


def _parse_sizes(text: str) -> list[int]:
    hint = "Use N1,N2,... or START:STOP:STEP (inclusive, STEP > 0)"
    try:
        if ":" in text:
            start, stop, step = (int(x) for x in text.split(":"))
            numbers = None
        else:
            numbers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"cannot read sizes from {text!r}", key="--sizes", hint=hint) from None
    if numbers is None:
        if step <= 0:
            raise InputError(f"STEP must be > 0 in {text!r}", key="--sizes", hint=hint)
        span = range(start, stop + 1, step)  # NOTE: a range's length costs nothing; a list of 1e11 sizes would not
        if len(span) > _MAX_SWEEP:
            raise InputError(f"{text!r} gives {len(span):,} sizes; a sweep holds at most {_MAX_SWEEP:,}", key="--sizes", hint=hint)
        numbers = list(span)
    if not numbers:
        raise InputError(f"{text!r} gives no size", key="--sizes", hint=hint)
    if len(numbers) > _MAX_SWEEP:
        raise InputError(f"{len(numbers):,} sizes; a sweep holds at most {_MAX_SWEEP:,}", key="--sizes")
    bad = [n for n in numbers if n <= 0]
    if bad:
        raise InputError(f"sizes must be > 0 (got {bad[0]})", key="--sizes", hint=hint)
    return numbers


#: output options, the extensions they write and whether they need a sweep or a comparison
_OUTPUTS = {
    "json": ("--json", (".json",), False),
    "trace": ("--trace", (".json",), False),
    "gantt": ("--gantt", (".png",), False),
    "csv": ("--csv", (".csv",), True),
    "plot": ("--plot", (".png",), True),
    "html": ("--html", (".html", ".htm"), False),
}
#: the most sizes one sweep may hold
_MAX_SWEEP = 1000
#: the most CPU workers (--ncpus): dmda weighs every worker for every task
_MAX_CPU_WORKERS = 1024
#: the most simulations at once on a local cluster (--jobs)
_MAX_JOBS = 1024


def _check_args(args, sweep: bool) -> None:
    """Refuse option values and output paths that cannot work, before any simulation runs.

    Every output path is checked here (extension, folder), so that a bad
    second output does not leave the first one written.
    """
    if args.seed < 0:
        raise InputError(f"must be >= 0 (got {args.seed})", key="--seed")
    if args.ncpus is not None:
        if args.workers != "all":
            raise InputError("CPU workers compute only with --workers all", key="--ncpus", hint="Add --workers all")
        if not 0 <= args.ncpus <= _MAX_CPU_WORKERS:
            raise InputError(f"must be from 0 to {_MAX_CPU_WORKERS} (got {args.ncpus})", key="--ncpus")
    if args.bandwidth_links is not None and args.bandwidth_scale is None:
        raise InputError("selects the links --bandwidth-scale scales, and no scale is given", key="--bandwidth-links",
                         hint="Add --bandwidth-scale FACTOR")
    if args.size is not None and args.sizes is not None:
        raise InputError("give --size or --sizes, not both", key="--sizes")
    if args.jobs is not None:
        _jobs(args)
        if not sweep:
            raise InputError("runs the simulations of a sweep or comparison in parallel, and this is a single run", key="--jobs")
    if sweep and (args.cluster is not None or (args.jobs or 1) > 1):
        from nodecast.workflows.parallel import require_dask

        require_dask(args.cluster)  # Dask, the 'parallel' extra
    if args.gpu_memory is not None:
        _parse_bytes(args.gpu_memory)
    if args.max_blocks is not None and args.max_blocks < 1:
        raise InputError(f"must be >= 1 (got {args.max_blocks})", key="--max-blocks")
    for attr, (option, suffixes, needs_many) in _OUTPUTS.items():
        path = getattr(args, attr)
        if path is None:
            continue
        if needs_many and not sweep:
            raise InputError(
                "writes a sweep or a comparison table, and this is a single run",
                key=option,
                hint="Give --sizes N1,N2,... or several schedulers (--scheduler dmda,dmdas), or --compare-reference; "
                "--json writes a single run's summary",
            )
        check_suffix(path, suffixes, option)
        if attr in ("gantt", "plot"):  # figures: matplotlib, the 'figures' extra
            from nodecast.report.figures import require_matplotlib

            require_matplotlib(path)
        check_writable(path, option)
    from nodecast.commands.output_paths import check_outputs

    # NOTE: from_args=False: simulate's --trace is an output, not the trace other commands read.
    check_outputs(args, {option: getattr(args, attr) for attr, (option, _, _) in _OUTPUTS.items()}, _input_files(args),
                  from_args=False)


def _input_files(args) -> list:
    """The files a run may read, so that no output replaces one: --dag, --platform (and the bus files beside it),
    --samples, the reference CSV, machine files, and the files of StarPU's folder (bus/, codelets/45/, and
    ../reference/ with --compare-reference)."""
    import os

    from nodecast.cost.tasks import STARPU_DIR_ENV

    files = [args.dag, args.platform, args.samples, args.compare_reference or None, args.machine,
             args.kernels_measured_on, args.roofline_gpu]
    folders = []
    if args.platform is not None:
        stem = Path(args.platform).name.split(".platform")[0] + "."
        folders.append((Path(args.platform).parent, stem))
    starpu = args.starpu_dir or os.environ.get(STARPU_DIR_ENV)
    if starpu:
        folders += [(Path(starpu) / "bus", ""), (Path(starpu) / "codelets" / "45", "")]
        if args.compare_reference is not None:
            folders.append((Path(starpu).parent / "reference", ""))
    for folder, prefix in folders:
        try:
            files += [f for f in folder.iterdir() if f.name.startswith(prefix)]
        except OSError:  # no such folder: the run says so where it reads it
            continue
    return files


def _schedulers(args) -> list[str]:
    names = [s.strip() for s in (args.scheduler or "dmda").split(",") if s.strip()]
    if not names:
        raise InputError(f"no scheduler named in {args.scheduler!r}", key="--scheduler", hint=f"Choose among {', '.join(SCHEDULERS)}")
    unknown = [s for s in names if s not in SCHEDULERS]
    if unknown:
        raise InputError(f"unknown scheduler {unknown[0]!r}", key="--scheduler", hint=f"Choose among {', '.join(SCHEDULERS)}")
    return list(dict.fromkeys(names))


def _setup(args):
    """The options that say what the platform and kernel models are built from (``nodecast.runtime.setup``)."""
    from nodecast.cost.tasks import SimSetup

    return SimSetup(
        starpu_dir=args.starpu_dir, starpu_machine=args.starpu_machine, platform_file=args.platform,
        machine=args.machine, gpus=args.gpus,
        gpu_memory_bytes=_parse_bytes(args.gpu_memory) if args.gpu_memory is not None else None,
        bandwidth_scale=args.bandwidth_scale, bandwidth_links=args.bandwidth_links,
        kernel_times_s=_kernel_times(args), kernel_time_mode=args.kernel_times, samples=args.samples, seed=args.seed,
        precision=args.precision, roofline_missing=args.roofline_missing,
        kernels_measured_on=args.kernels_measured_on, roofline_gpu=args.roofline_gpu,
    )


def _kernel_times(args) -> dict[str, float]:
    """``--kernel-time KERNEL=SECONDS`` options as {kernel: seconds}."""
    from nodecast.traces.starpu_files import MAX_KERNEL_S

    fixed: dict[str, float] = {}
    for item in args.kernel_time:
        name, sep, value = item.partition("=")
        name = name.strip()
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not sep or not name or not 0 < seconds <= MAX_KERNEL_S:
            raise InputError(f"expected KERNEL=SECONDS with 0 < SECONDS <= {MAX_KERNEL_S:g} (got {item!r})", key="--kernel-time",
                             hint="e.g. --kernel-time my_kernel=2.5e-3")
        fixed[name] = seconds
    return fixed


def _check_kernel_times(args, graph) -> None:
    """A --kernel-time for a kernel the graph does not have is a typo, not a no-op."""
    kernels = graph.tasks.kernels
    unknown = [k for k in _kernel_times(args) if k not in kernels]
    if unknown:
        raise InputError(
            f"no kernel {unknown[0]!r} in {graph.tasks.name}",
            key="--kernel-time",
            hint=f"Its kernels are: {', '.join(kernels)}",
        )


def _options(args, scheduler: str, trace: bool):
    from nodecast.runtime.options import Overheads, RuntimeOptions

    return RuntimeOptions(
        scheduler=scheduler,
        workers=args.workers,
        n_cpu_workers=args.ncpus,
        pipeline=args.pipeline,
        prefetch=not args.no_prefetch,
        sharing=args.sharing,
        overheads=Overheads.none() if args.no_overheads else Overheads(),
        seed=args.seed,
        trace=trace,
    )


def _graph(args, size: int | None):
    from nodecast.graph.apps import APPS
    from nodecast.graph.taskgraph import load_dag

    if args.dag is not None:
        if args.app is not None:
            raise InputError("give either an application or --dag, not both", key="--dag")
        return load_dag(args.dag)
    if args.app is None:
        raise InputError("no application given", hint="Use 'nodecast simulate cholesky --size N', 'lu', or --dag FILE")
    if size is None:
        raise InputError("no matrix size given", key="--size", hint="Use --size N or --sizes N1,N2,...")
    return APPS[args.app](size, args.block_size, precision=args.precision)


def _jobs(args) -> int | None:
    if args.jobs is not None and not 1 <= args.jobs <= _MAX_JOBS:
        raise InputError(f"must be from 1 to {_MAX_JOBS} (got {args.jobs})", key="--jobs")
    return args.jobs


def _wrote(path: str | Path) -> None:
    print(f"wrote {shown(path)}", file=sys.stderr)


def _note_one_at_a_time(args, count: int) -> None:
    """Without --jobs and --cluster and without Dask: one line saying that the simulations run one at a time."""
    from nodecast.workflows.parallel import one_at_a_time_note

    if args.jobs is None and args.cluster is None and (note := one_at_a_time_note(count, "simulations")):
        from nodecast.report.terminal import said

        said(note)


def _progress(total: int, label: str, verb: str):
    """Progress of ``total`` runs on stderr (so that results piped or redirected from stdout stay clean): a bar at a
    terminal, else "compared 120 of 480 runs, 2 m 10 s" now and then, so that a log shows the job is alive."""
    from nodecast.report.terminal._progress import job_progress

    return job_progress(total, label, verb)


# ------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> int:
    from nodecast.runtime.setup import platform_node
    from nodecast.runtime.simulation import Simulation

    if args.compare_reference is not None:
        _check_args(args, sweep=True)
        return _compare(args)
    schedulers = _schedulers(args)
    sizes = _parse_sizes(args.sizes) if args.sizes else [args.size]
    if args.dag is not None:
        sizes = [None]
    sweep = len(sizes) > 1 or len(schedulers) > 1
    _check_args(args, sweep)
    from nodecast.runtime.setup import platform_and_models

    setup = _setup(args)
    plat, models = platform_and_models(setup)
    if sweep and (args.trace or args.gantt):
        raise InputError("--trace and --gantt need a single run", hint="Drop --sizes or give one scheduler")
    if not sweep:
        graph = _graph(args, sizes[0])
        _check_kernel_times(args, graph)
        want_trace = bool(args.trace or args.gantt or args.html)  # the page draws the schedule
        res = Simulation(graph, plat, models, _options(args, schedulers[0], want_trace)).run()
        _outputs(args, res, trace=True, gantt=True, machine=platform_node(setup))
        return 0
    from nodecast.workflows.simulate_sweep import run_sweep

    jobs = _jobs(args)
    dag = _graph(args, None) if args.dag is not None else None
    # NOTE: checks the application, sizes and kernel names here, before any cluster starts
    _check_kernel_times(args, dag if dag is not None else _graph(args, min(sizes)))
    _note_one_at_a_time(args, len(sizes) * len(schedulers))
    with _progress(len(sizes) * len(schedulers), f"simulating {args.app or 'dag'}", "simulated") as progress:
        result = run_sweep(_options(args, schedulers[0], False), plat, models, app=args.app, sizes=sizes,
                           schedulers=schedulers, block_size=args.block_size, precision=args.precision, graph=dag,
                           jobs=jobs, address=args.cluster, progress=progress.advance)
    _outputs(args, result, machine=platform_node(setup))
    return 0


def _outputs(args, result, *, trace: bool = False, gantt: bool = False, machine=None) -> None:
    """Print ``result`` and write the files the options ask for, each announced on stderr."""
    from nodecast.report import figures, html, terminal
    from nodecast.report.files.simulate import write_csv, write_json
    from nodecast.runtime.outputs import write_chrome_trace

    terminal.render(result)
    if args.csv:
        _wrote(write_csv(result, args.csv))
    if args.json:
        _wrote(write_json(result, args.json))
    if trace and args.trace:
        write_chrome_trace(result, args.trace)
        _wrote(args.trace)
    if gantt and args.gantt:
        _wrote(figures.draw(result, args.gantt))
    if args.plot:
        _wrote(figures.draw(result, args.plot))
    if args.html:
        _wrote(html.render(result, args.html, command=getattr(args, "command_line", None), machine=machine))


def _compare(args) -> int:
    from nodecast.workflows.simulate_reference import compare_reference, load_reference, load_setups, select_rows
    from nodecast.runtime.setup import machines_there, platform_and_models, platform_node, starpu_dir, starpu_platform_file

    setup = _setup(args)
    folder = starpu_dir(setup)
    default_machine = args.starpu_machine or "attila"
    if args.compare_reference:
        csv_path = Path(args.compare_reference)
    elif folder is not None:
        csv_path = folder.parent / "reference" / f"{default_machine}.csv"
    else:
        raise InputError("no reference CSV given", key="--compare-reference", hint="Give the CSV path or --starpu-dir")
    table = load_reference(csv_path)
    rows = select_rows(table, default_machine=default_machine, machine=args.starpu_machine, max_blocks=args.max_blocks,
                       app=args.app, schedulers=args.scheduler.split(",") if args.scheduler else None)
    machines = list(dict.fromkeys(r.machine for r in rows))
    override = "--platform" if args.platform is not None else "--machine" if args.machine is not None else None
    if override and len(machines) > 1:
        raise InputError(
            f"replaces the platform of every row, and {csv_path} has rows of {len(machines)} machines ({', '.join(machines)})",
            key=override,
            hint=f"Keep one machine's rows with --starpu-machine NAME, or leave {override} out",
        )
    if folder is None and override is None:
        raise InputError("no calibration folder for the reference rows' machines", key="--starpu-dir",
                         hint="Give --starpu-dir (StarPU's sampling folder) or set NODECAST_STARPU_DIR")

    def load(machine: str):
        if override is None and starpu_platform_file(folder, machine) is None:
            raise InputError(f"no platform file for it in {folder / 'bus'} (machines there: {machines_there(folder)})")
        return platform_and_models(setup, machine)

    setups = load_setups(
        rows,
        load,
        csv_path,
        hint="Give --starpu-dir a folder with that machine's calibration, or compare only other machines' rows with --starpu-machine NAME",
    )
    _note_one_at_a_time(args, len(rows))
    with _progress(len(rows), "comparing with the reference", "compared") as progress:
        result = compare_reference(table, rows, setups, options=_options(args, "dmda", False),
                                   progress=progress.advance, jobs=_jobs(args), address=args.cluster)
    _outputs(args, result, machine=platform_node(setup))
    return 0
