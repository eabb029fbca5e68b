"""The ``nodecast`` command: parse, call the library, print.

Each subcommand lives in ``nodecast.commands.<name>`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (called with
the parsed arguments, returning an exit code). User errors (``InputError``)
print one line to stderr and exit with code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from nodecast import __version__
from nodecast._alloc import keep_large_allocations
from nodecast.errors import InputError

#: Subcommand modules under nodecast.commands, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "machines",
    "inspect",
    "project",
    "curves",
    "evaluate",
    "convert",
    "kernels",
    "roofline",
    "simulate",
    "replay",
    "forecast",
    "calibrate",
    "record",
)


class _Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and one line on a usage error (as argparse does), no usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"nodecast {self.prog.split(' ', 1)[-1]}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    parser = _Parser(
        prog="nodecast",
        description="Forecast how a GPU application performs on a compute node you do not have.",
    )
    parser.add_argument("--version", action="version", version=f"nodecast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(f"nodecast.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # The command line as typed, for the reports that show how they were made (--html).
    args.command_line = ["nodecast", *(sys.argv[1:] if argv is None else argv)]
    keep_large_allocations()
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"nodecast: error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nodecast: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `nodecast ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
