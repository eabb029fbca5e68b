"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse

from nodecast.errors import InputError
from nodecast.machines import Machine, load_machine
from nodecast.models.base import model_names
from nodecast.traces.load import load_trace
from nodecast.traces.trace import Trace


def add_machine_options(parser: argparse.ArgumentParser) -> None:
    """--from/--to: catalogue names or machine TOML paths."""
    parser.add_argument("--from", dest="source", required=True, metavar="MACHINE",
                        help="node the trace was recorded on (catalogue name or TOML path)")
    parser.add_argument("--to", dest="target", required=True, metavar="MACHINE",
                        help="node to project onto (catalogue name or TOML path)")


def add_model_option(parser: argparse.ArgumentParser) -> None:
    """--models: a comma-separated subset of the registered models."""
    parser.add_argument("--models", metavar="M1,M2", default=None,
                        help="models to run (default: all); see `nodecast models`")


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


def machines(args: argparse.Namespace) -> tuple[Machine, Machine]:
    """The source and target machines named by --from/--to."""
    return load_machine(args.source), load_machine(args.target)


def trace(path: str) -> Trace:
    """Load a trace (any supported format, or sample:NAME)."""
    return load_trace(path)
