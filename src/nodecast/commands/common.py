"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse

from nodecast.errors import InputError
from nodecast.machines import Machine, load_machine
from nodecast.machines.resolve import resolve_source
from nodecast.models.registry import model_names
from nodecast.traces.load import load_trace
from nodecast.traces.trace import Trace


_MACHINE = "catalogue name, machine TOML file, or GPU[xN][@HOST] composed from a data sheet"


def add_machine_options(parser: argparse.ArgumentParser, *, target_trace: bool = False) -> None:
    """--from/--to (MACHINE: a catalogue name, a machine file or a GPU[xN][@HOST] spec) and --allow-gpu-mismatch.

    --from may be omitted: the trace's GPU name picks the data sheet. With
    ``target_trace`` (a command that also reads a trace from the target), --to
    may be omitted too and is picked from that trace.
    """
    parser.add_argument("--from", dest="source", metavar="MACHINE",
                        help=f"node the trace was recorded on ({_MACHINE}); default: composed from the trace's "
                             "GPU name and the default host")
    parser.add_argument("--to", dest="target", required=not target_trace, metavar="MACHINE",
                        help=f"node to project onto ({_MACHINE})"
                             + ("; default: composed from the target trace's GPU name" if target_trace else ""))
    parser.add_argument("--allow-gpu-mismatch", action="store_true",
                        help="project even when the trace's GPU is not the --from node's GPU (said in the notes)")


#: What --models defaults to where one model per kind gives each op its time (forecast, replay on B): the
#: first of ``nodecast.models.registry.model_chains(None)`` per kind (a test keeps the two in step).
CHAIN_DEFAULT_HELP = ("models giving each op its time, first that handles an op wins (default: the source run as "
                      "calibration, each op's time on A x the model's ratio B/A: per kind, copies ahead-scaled, "
                      "kernels default-kernel: the roofline with --metrics, wave scaling without; ops no model "
                      "handles keep their measured time; --models ahead: copies from the data sheets alone); see "
                      "`nodecast models`")


def add_model_option(parser: argparse.ArgumentParser, help_text: str | None = None) -> None:
    """--models: a comma-separated subset of the registered models (``help_text``: what the default is here)."""
    parser.add_argument("--models", metavar="M1,M2", default=None,
                        help=help_text or "models to run (default: all); see `nodecast models`")


def add_metrics_option(parser: argparse.ArgumentParser) -> None:
    """--metrics: Nsight Compute CSV files of the source run's kernels (for the kernel models)."""
    parser.add_argument("--metrics", metavar="CSV", action="append", default=None,
                        help="Nsight Compute CSV of the source run's kernels (repeat for one-metric-per-file sets); "
                             "enables the kernel models (see `nodecast kernels --print-ncu-command`)")


def metrics(args: argparse.Namespace):  # noqa: ANN201
    """The KernelMetrics named by --metrics, or None."""
    if not args.metrics:
        return None
    from nodecast.traces.ncu import read_ncu_csv

    return read_ncu_csv(args.metrics)


def parse_models(text: str | None) -> list[str] | None:
    """Split --models; unknown names are caught by the registry with the known list."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise InputError("empty model list", key="--models", hint=f"Known: {', '.join(model_names())}")
    return names


def machines(args: argparse.Namespace, trace: Trace | None = None,
             target_trace: Trace | None = None) -> tuple[Machine, Machine]:
    """The source and target machines of --from/--to, checked against (or picked from) the traces' GPU names.

    ``Machine.notes`` say how each was picked; commands print them with their
    results (``nodecast.machines.resolve_source``).
    """
    allow = getattr(args, "allow_gpu_mismatch", False)
    if trace is None and args.source is None:
        raise InputError("missing --from MACHINE", key="--from", hint=f"Give a {_MACHINE}")
    source = load_machine(args.source) if trace is None else resolve_source(trace, args.source, allow)
    if target_trace is None:
        from nodecast.workflows.targets import target_machine

        # A GPU alone (no @HOST) is A's node with that GPU: what the user does not name is A's.
        return source, target_machine(args.target, source)
    return source, resolve_source(target_trace, args.target, allow, option="--to")


def trace(path: str) -> Trace:
    """Load a trace (any supported format, or sample:NAME)."""
    return load_trace(path)
