"""A command's outputs checked, before any work, against its input files and against each other.

``check_outputs(args, outputs, inputs)`` refuses an output that is one of the
files the command reads, or two outputs on one file
(``nodecast.fileio.check_outputs``: same file by identity, not by spelling).
The input files are gathered from the argparse destinations the commands
use for them (``INPUT_DESTS``: traces, Nsight Compute CSVs, machine files),
so a command that keeps those names only names its outputs; a command reads
other files (a DAG, the pairs of two folders) passes them as ``inputs``.
``report_options.check_report_paths`` calls it with ``--json`` and
``--html`` added, so every command with report options gets the check.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping

#: argparse destinations that name files a command reads: a path, a list of paths, or a machine or comma list of
#: machines (``--to a.toml,b``: a catalogue name, a machine file or a GPU[xN][@HOST] spec; only existing files count).
INPUT_DESTS = ("trace", "trace_a", "trace_b", "metrics", "target_metrics", "sass_source", "sass_target",
               "sass_counts", "source", "target", "machines", "base")

PathLike = str | os.PathLike[str]


def input_files(args: argparse.Namespace, dests: Iterable[str] = INPUT_DESTS) -> list[PathLike]:
    """The values of ``dests`` in ``args``, lists flattened and comma lists also split (names that are no file
    are harmless: only existing files are compared)."""
    found: list[PathLike] = []
    for dest in dests:
        value = getattr(args, dest, None)
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is None:
                continue
            found.append(item)
            if isinstance(item, str) and "," in item:
                found += [part.strip() for part in item.split(",") if part.strip()]
    return found


def check_outputs(args: argparse.Namespace, outputs: Mapping[str, PathLike | None],
                  inputs: Iterable[PathLike | None] = (), *, from_args: bool = True) -> None:
    """InputError when an output of ``outputs`` ({option: path or None}) is an input file (``inputs`` and, with
    ``from_args``, the ``INPUT_DESTS`` of ``args``) or another output's file; nothing is read or written."""
    from nodecast.fileio import check_outputs as check

    check(outputs, [*(input_files(args) if from_args else []), *inputs])
