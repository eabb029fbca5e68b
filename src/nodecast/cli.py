"""The ``nodecast`` command: parse, call the library, print.

Each subcommand lives in ``nodecast.commands.<name>`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (called with
the parsed arguments, returning an exit code). User errors (``InputError``)
print one line to stderr and exit with code 2, without a traceback; so does
running out of memory (the line says how large the trace was and what to do:
``nodecast.out_of_memory``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from nodecast import __version__, _signals, fileio
from nodecast import out_of_memory  # imported before any memory can run out
from nodecast._alloc import keep_large_allocations
from nodecast.errors import InputError
from nodecast.text import shown

#: Subcommand modules under nodecast.commands, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "machines",
    "inspect",
    "project",
    "curves",
    "collectives",
    "evaluate",
    "convert",
    "kernels",
    "fit_kernels",
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
        # "nodecast replay: ..." from a subcommand's parser; the top-level parser's prog is "nodecast" alone.
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


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


class _ReaderMayLeave:
    """Standard output whose reader may go away (``nodecast ... --html page.html | head``).

    The reader leaving ends the terminal output, not the command: the files it
    was asked for are still written. The first write or flush that finds the
    pipe closed points standard output at the null device, and the rest of
    the output goes there.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError, AttributeError):  # not a real file (a test's capture): nothing to re-point
            pass
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    Ctrl-C, SIGTERM and SIGHUP stop the run (``nodecast._signals``): its
    temporary files and the outputs it had finished are removed, one line says
    so on stderr, and the exit code is 130, 143 or 129.
    """
    with _signals.stop_on_signals(), fileio.output_run():
        try:
            code = _run(argv)
            _signals.check()  # a stop whose exception something in the run swallowed
        except KeyboardInterrupt as exc:
            return _stopped(exc)
        except Exception:
            # An error that follows a swallowed stop is its consequence, not a bug to report: numba's compiler,
            # interrupted inside a ctypes callback that drops the exception, fails later on its half-built library.
            stop = _signals.received()
            if stop is None:
                raise
            return _stopped(stop)
        return code


def _stopped(exc: KeyboardInterrupt) -> int:
    """Remove the outputs the stopped run had finished and say so (one line), then how it stopped; the exit code."""
    with _signals.deferred():  # a second Ctrl-C, or the job's SIGTERM after it, must not cut the cleanup short
        removed = fileio.discard_finished()
        if removed:
            names = ", ".join(shown(path) for path in removed)
            print(f"nodecast: removed {names}, written before the run was stopped", file=sys.stderr)
        print(f"nodecast: {_signals.describe(exc)}", file=sys.stderr)
    return _signals.exit_code(exc)


def _run(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command; InputError is one line and exit code 2."""
    keep_large_allocations()  # before the commands import pyarrow: it picks its allocator once (nodecast._alloc)
    parser = build_parser()
    args = parser.parse_args(argv)
    # The command line as typed, for the reports that show how they were made (--html).
    args.command_line = ["nodecast", *(sys.argv[1:] if argv is None else argv)]
    stdout = sys.stdout
    sys.stdout = _ReaderMayLeave(stdout)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"nodecast: error: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # a write that did not go through sys.stdout
        return 0
    except Exception as exc:  # memory running out (a MemoryError, or what it makes of a thread or a library load)
        if not out_of_memory.ran_out(exc):
            raise
        # As a stopped run, one that ran out leaves no outputs that look complete (a JSON without its page).
        removed = fileio.discard_finished()
        print(f"nodecast: error: {out_of_memory.error(removed).message}", file=sys.stderr)
        return 2
    finally:
        try:
            sys.stdout.flush()
        finally:
            sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
