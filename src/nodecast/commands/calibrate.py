"""``nodecast calibrate``: Comm|Scope-grade microbenchmarks of this node -> benchmark JSON and a Machine file.

Measures, for every GPU: cudaMemcpyAsync host<->GPU (pageable, pinned by
cudaHostRegister and cudaHostAlloc, per NUMA node) one way and both ways at
once, device->device, GPU<->GPU with and without peer access, zero-copy
reads and writes, unified-memory demand migration and prefetch, 1 B to
1 GiB; and the GPU's FMA and ADD/MUL peaks per precision and its DRAM, L2,
L1 and shared-memory bandwidth. Raw results go to Google-Benchmark JSON; the
Machine file (-o) takes cpu/gpu/links from --base and adds [measured]: the
1-byte cost, fitted bandwidth and curve per copy class, and the GPU maxima,
and one host thread's memcpy rate (the rate the driver stages pageable copies
at). --host-only measures that rate alone, without a GPU.
See docs/calibrate.md. Needs an NVIDIA GPU and pip install '.[gpu]' (in the checkout), except --host-only.
"""

from __future__ import annotations

import argparse
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

import nodecast.calibrate as cal
from nodecast import __version__
from nodecast.commands.output_paths import check_outputs
from nodecast.calibrate import plan as plan_mod
from nodecast.calibrate import writers
from nodecast.calibrate.results import BenchmarkFamilies, Calibration, HostCopyCalibration
from nodecast.calibrate.stats import Budget
from nodecast.errors import InputError
from nodecast.fileio import check_suffix, check_writable
from nodecast.machines import load_machine


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` subcommand."""
    p = sub.add_parser("calibrate", help="measure this node's transfers and GPU (needs a GPU) into a machine file",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", metavar="MACHINE.toml",
                   help="machine file to write (needs --base); the benchmark JSON goes beside it unless --json")
    p.add_argument("--base", metavar="MACHINE", help="catalogue machine (or TOML) giving cpu, gpu and links")
    p.add_argument("--json", metavar="RESULTS.json", help="Google-Benchmark JSON of every point")
    p.add_argument("--name", help="name of the written machine (default: <base>-measured)")
    p.add_argument("--gpus", metavar="I,J", help="CUDA device indices to measure (default: all)")
    p.add_argument("--quick", action="store_true",
                   help="about a minute: first GPU (and one pair), its own NUMA node, 11 sizes up to 64 MiB, short budgets")
    p.add_argument("--budget-s", type=float, metavar="S",
                   help="measured seconds per point (default 0.25; 0.02 with --quick; Comm|Scope uses 1)")
    p.add_argument("--min-size", default="1", metavar="BYTES", help="smallest size (default 1)")
    p.add_argument("--max-size", metavar="BYTES", help="largest size (default 1GiB, left out where it does not fit)")
    p.add_argument("--only", metavar="PREFIX[,PREFIX]", help="families whose name starts so (see --list)")
    p.add_argument("--numa", choices=("all", "local"), default="all",
                   help="host memory on every NUMA node (default) or only each GPU's own")
    p.add_argument("--no-flush", action="store_true", help="do not evict host buffers from the CPU caches (names lose _flush)")
    p.add_argument("--no-gate", action="store_true", help="do not hold streams with a spin kernel while queueing")
    p.add_argument("--list", action="store_true", help="list the benchmark families and exit (no GPU needed)")
    p.add_argument("--host-only", action="store_true",
                   help="measure only one host thread's memcpy rate (the staging rate of pageable copies; no GPU "
                        "needed) into the machine file of -o and --base")
    p.set_defaults(func=run)


# -- checks before any measurement -----------------------------------------------------------


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    """``0,2`` -> (0, 2); None -> None (every GPU)."""
    if text is None:
        return None
    try:
        gpus = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise InputError(f"not a list of GPU indices: {text!r}", key="--gpus", hint="Write e.g. --gpus 0,1") from None
    if not gpus:
        raise InputError("empty GPU list", key="--gpus")
    return gpus


def parse_only(text: str | None) -> tuple[str, ...]:
    """``--only A,B`` -> ("A", "B"); None -> () (every family). An empty list is an InputError:
    ``--only ""`` would otherwise silently measure every family, the opposite of a filter."""
    if text is None:
        return ()
    prefixes = tuple(p.strip() for p in text.split(",") if p.strip())
    if not prefixes:
        raise InputError(f"empty family list ({text!r})", key="--only",
                         hint="Give family name prefixes, e.g. --only cudaMemcpyAsync (see --list), or leave --only out")
    return prefixes


#: A machine name: what the catalogue's file names are made of (it is shown in tables and used with --to/--from).
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def check_name(name: str | None) -> None:
    """InputError when ``--name`` is not a plain machine name (empty, a path, spaces...)."""
    if name is not None and not _NAME_RE.fullmatch(name):
        raise InputError(f"{name!r} is not a machine name", key="--name",
                         hint="Use up to 64 letters, digits and . _ + -, starting with a letter or digit, "
                              "e.g. --name h100-node7-measured")


def options_from_args(args: argparse.Namespace) -> plan_mod.Options:
    """The plan options of the command line (sizes, GPUs, budget, filters)."""
    budget = None
    if args.budget_s is not None:
        if not (math.isfinite(args.budget_s) and 0 < args.budget_s <= plan_mod.MAX_BUDGET_S):
            raise InputError(f"must be a number of seconds > 0 and <= {plan_mod.MAX_BUDGET_S:g} "
                             f"(got {args.budget_s:g})", key="--budget-s",
                             hint="It is the measured time per point: Comm|Scope uses 1, the default is 0.25")
        base = plan_mod.QUICK_BUDGET if args.quick else plan_mod.DEFAULT_BUDGET
        budget = Budget(measured_s=args.budget_s, min_reps=base.min_reps, max_reps=base.max_reps,
                        wall_s=max(base.wall_s, 4 * args.budget_s), warmup_reps=base.warmup_reps)
    max_given = args.max_size is not None
    max_bytes = plan_mod.parse_size(args.max_size, key="--max-size") if max_given else plan_mod.DEFAULT_MAX_BYTES
    families = parse_only(args.only)
    options = plan_mod.Options(
        gpus=parse_gpus(args.gpus), quick=args.quick, min_bytes=plan_mod.parse_size(args.min_size, key="--min-size"),
        max_bytes=max_bytes, max_bytes_given=max_given, families=families, numa=args.numa,
        flush=not args.no_flush, budget=budget,
    )
    plan_mod.check_options(options)
    return options


# -- the command -----------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Check, measure, write, print a summary."""
    if args.list:
        return _list(args)
    if args.host_only:
        return _host_only(args)
    if not args.output and not args.json:
        raise InputError("nothing to write", key="calibrate", hint="Give -o MACHINE.toml --base NAME and/or --json RESULTS.json")
    if args.output and not args.base:
        raise InputError("a machine file needs --base", key="--base",
                         hint="Name the catalogue machine this node is (nodecast machines list) or give a TOML path")
    # Every option is checked before a GPU session is opened: a user sees option mistakes first.
    out_toml = check_writable(args.output, "-o") if args.output else None
    if out_toml is not None:
        check_suffix(out_toml, (".toml",), "a machine file")
    json_path = args.json or (str(out_toml.with_suffix("")) + ".benchmarks.json" if out_toml else None)
    out_json = check_suffix(check_writable(json_path, "--json"), (".json",), "the benchmark results")  # type: ignore[arg-type]
    check_outputs(args, {"-o": out_toml, "--json": out_json})  # not onto the --base machine file, nor one onto the other
    check_name(args.name)
    base = load_machine(args.base) if args.base else None
    options = options_from_args(args)

    err = Console(stderr=True)
    session = cal.open_session()
    try:
        plan = plan_mod.build_plan(session.topology, options)
        if not plan.cases:
            raise InputError("no benchmark case can run with these options", key="calibrate",
                             hint="; ".join(w.reason for w in plan.waived[:3]) or "Check --only and --gpus")
        if session.governor_warning:
            err.print(f"[yellow]warning:[/] {session.governor_warning}")
        for note in plan.notes:
            err.print(f"note: {note}")
        measurer = session.measurer(gate=not args.no_gate)
        results = _run_with_progress(plan, measurer, err)
    finally:
        session.close()
    warnings = list(getattr(measurer, "warnings", []))
    for w in dict.fromkeys(warnings):
        err.print(f"[yellow]warning:[/] {w}")

    values = cal.derive_measured(plan, results)
    host_copy = _measure_host_copy(err, options.quick)
    context = dict(session.context)
    context.update({"nodecast_version": __version__, "nodecast_quick": options.quick,
                    "nodecast_flush": options.flush, "nodecast_gate": not args.no_gate,
                    "nodecast_facts": dict(session.facts), "nodecast_warnings": warnings})
    writers.write_benchmark_json(out_json, writers.benchmark_document(results, plan, context))
    machine = None
    if out_toml is not None and base is not None:
        machine = _write_machine(out_toml, base, session, plan, values, options, args, warnings, host_copy)
    from nodecast.report import terminal

    terminal.render(Calibration(results, values, out_json, out_toml, machine, host_copy))
    return 0


def _run_with_progress(plan: plan_mod.Plan, measurer: Any, console: Console) -> list[cal.PointResult]:
    from nodecast.report.terminal._progress import step_progress

    with step_progress(plan.points, "calibrate", console) as progress:  # each point's name after the bar
        return cal.run_plan(plan, measurer, progress=progress.step)


def _write_machine(out: Path, base: Any, session: Any, plan: plan_mod.Plan, values: cal.MeasuredValues,
                   options: plan_mod.Options, args: argparse.Namespace, warnings: list[str],
                   host_copy: Any = None) -> Any:
    gpu, _ = cal.reference_cases(plan)
    gpu_name = session.topology.gpus[gpu].name if gpu is not None else ""
    now = datetime.now(UTC)
    facts = dict(session.facts)
    b = plan.budget
    facts["method"] = (
        f"repeat until {b.measured_s:g} s of measured time per point (>= {b.min_reps} reps, <= {b.max_reps}, "
        f"<= {b.wall_s:g} s wall, {b.warmup_reps} warm-up); CUDA events for asynchronous work, host clock for "
        f"host-synchronous work; cache flush {'on' if options.flush else 'off'}; gate {'off' if args.no_gate else 'on'}"
    )
    if plan.waived:
        facts["waived"] = "; ".join(f"{w.family} on {w.where}: {w.reason}" for w in plan.waived)
    if plan.notes:
        facts["plan_notes"] = "; ".join(plan.notes)
    if warnings:
        facts["warnings"] = "; ".join(dict.fromkeys(warnings))
    prov = writers.Provenance(
        origin=f"nodecast calibrate {__version__}" + (" --quick" if options.quick else ""),
        date=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        driver=session.driver,
        gpu_name=gpu_name,
        facts=facts,
    )
    name = args.name or f"{base.name}-measured"
    description = f"{base.description}; measured by nodecast calibrate on {now.strftime('%Y-%m-%d')}"
    doc = writers.machine_document(base, writers.measured_table(values, prov, host_copy), name=name,
                                   description=description)
    return writers.write_machine_toml(out, doc, writers.machine_header(base, prov))


def _measure_host_copy(err: Console, quick: bool) -> Any:
    """One host thread's copy rate (``nodecast.calibrate.host_copy``); None, with a warning, when it cannot run."""
    from nodecast.calibrate import host_copy as hc

    err.print("measuring one host thread's memcpy rate (the staging rate of pageable copies)...")
    try:
        return hc.measure_host_copy(budget=hc.QUICK_BUDGET if quick else hc.BUDGET)
    except hc.HostCopyError as exc:
        err.print(f"[yellow]warning:[/] host copy not measured: {exc}")
        return None


def _host_only(args: argparse.Namespace) -> int:
    """``--host-only``: measure the host copy rate and write it into a machine file (no GPU)."""
    if not args.output or not args.base:
        raise InputError("--host-only writes a machine file: give -o MACHINE.toml and --base NAME", key="--host-only",
                         hint="e.g. nodecast calibrate --host-only --base titan -o node.toml")
    for option, given in (("--json", args.json), ("--gpus", args.gpus), ("--only", args.only)):
        if given:
            raise InputError(f"{option} does not apply to --host-only (it measures no GPU)", key=option)
    out_toml = check_suffix(check_writable(args.output, "-o"), (".toml",), "a machine file")
    check_outputs(args, {"-o": out_toml})  # not onto the --base machine file
    check_name(args.name)
    base = load_machine(args.base)
    err = Console(stderr=True)
    host_copy = _measure_host_copy(err, args.quick)
    if host_copy is None:
        raise InputError("nothing measured, no file written", key="--host-only", hint="Free some memory and retry")
    from nodecast.calibrate.host import host_facts, numa_nodes, read_governors

    now = datetime.now(UTC)
    prov = writers.Provenance(
        origin=f"nodecast calibrate {__version__} --host-only" + (" --quick" if args.quick else ""),
        date=now.strftime("%Y-%m-%dT%H:%M:%SZ"), driver="", gpu_name="",
        facts=host_facts(read_governors(), numa_nodes(), None),
    )
    name = args.name or f"{base.name}-measured"
    description = f"{base.description}; host copy rate measured by nodecast calibrate on {now.strftime('%Y-%m-%d')}"
    doc = writers.machine_document(base, writers.with_host_copy(base, host_copy, prov), name=name,
                                   description=description)
    machine = writers.write_machine_toml(out_toml, doc, writers.machine_header(base, prov))
    from nodecast.report import terminal

    terminal.render(HostCopyCalibration(host_copy, out_toml, machine))
    return 0


def _list(args: argparse.Namespace) -> int:
    prefixes = parse_only(args.only)
    rows = plan_mod.describe_families(prefixes)
    if not rows:
        raise InputError(f"no benchmark family starts with {args.only}", key="--only")
    from nodecast.report import terminal

    terminal.render(BenchmarkFamilies(rows))
    return 0
