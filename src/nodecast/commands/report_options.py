"""``--json [FILE]`` and ``--html FILE``: a command's result as JSON (printed or written) and as a report page.

Commands add both with ``add_report_options``, check the paths before any
work with ``check_report_paths`` (given their other outputs too, so that no
output replaces an input or another output) and hand their result to
``emit``, which prints it (``report.terminal.render``, or the JSON document
when ``--json`` has no file) and writes the files asked for
(``report.files``, ``report.html``), each through a temporary file.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: ``--json`` given without a file: print the document instead of the tables.
STDOUT = "-"


def add_report_options(parser: argparse.ArgumentParser, what: str = "the result", *, html: bool = True) -> None:
    """Add ``--json [FILE]`` and (with ``html``) ``--html FILE``."""
    parser.add_argument("--json", nargs="?", const=STDOUT, default=None, metavar="FILE",
                        help=f"{what} as JSON: headline numbers first, then every value and table (SI units); "
                             "written to FILE (.json), or printed instead of the tables when no FILE is given")
    if not html:
        parser.set_defaults(html=None)
        return
    parser.add_argument("--html", metavar="FILE",
                        help=f"{what} as one self-contained HTML page (.html): headline, inputs with their sources, "
                             "sortable tables, interactive figures, what was not modelled; opens offline")


def add_notes_option(parser: argparse.ArgumentParser) -> None:
    """``--notes decisive|all|none``: which notes the terminal prints (``report.terminal._notes``)."""
    from nodecast.report.terminal._notes import DEFAULT, HELP, NOTES

    parser.add_argument("--notes", choices=NOTES, default=DEFAULT, help=HELP)


def check_report_paths(args: argparse.Namespace, outputs: Mapping[str, Any], inputs: Iterable[Any] = ()) -> None:
    """InputError, before any work, when a --json or --html path cannot be written, or when any output (these and
    the command's other ``outputs``, {option: path or None}) is one of the command's input files or another
    output's file (``output_paths.check_outputs``: its traces, CSVs and machine files, and ``inputs``)."""
    from nodecast.commands.output_paths import check_outputs
    from nodecast.fileio import check_writable
    from nodecast.report.files import check_json_path
    from nodecast.report.html.page import check_html_path

    if args.json not in (None, STDOUT):
        check_json_path(args.json)
        check_writable(args.json, "--json")
    if args.html:
        check_html_path(args.html)
        check_writable(args.html, "--html")
    check_outputs(args, {**outputs, "--json": None if args.json == STDOUT else args.json, "--html": args.html},
                  inputs)


def emit(result: Any, args: argparse.Namespace, **options: Any) -> list[Path]:
    """Print ``result`` (tables, or JSON with a bare ``--json``) and write its --json file and --html page;
    ``options`` go to every renderer (``top=10``). Returns the paths written."""
    from nodecast.report import files, terminal

    written = []
    if args.json == STDOUT:
        print(files.dumps(files.document(result, **options)))
    else:
        # --notes is for the terminal only: the JSON and the page hold every note.
        terminal.render(result, **options, **({"notes": args.notes} if getattr(args, "notes", None) else {}))
        if args.json:
            written.append(files.write_json(files.document(result, **options), args.json))
    if args.html:
        from nodecast.report import html

        written.append(html.render(result, args.html, getattr(args, "command_line", None), **options))
    return written
