"""Bootstrap run in the child process of ``nodecast record``: trace a Python program with CUPTI.

Usage (``nodecast record`` builds this command line)::

    python -m nodecast.record._inject --records FILE -- script.py [args...]
    python -m nodecast.record._inject --records FILE -- -m package.module [args...]

It enables CUPTI activity tracing *before* the program imports anything
CUDA, runs the program with ``runpy`` as ``__main__`` (``sys.argv`` as the
program expects), then flushes CUPTI and closes the records file. The file
is JSON lines, streamed from CUPTI's buffer-completed callback::

    {"status": "started", "pid": 1234, ...}
    {"table": "KERNEL", "start": ..., ...}        one line per row
    {"status": "done", "exit_code": 0, "kernel_names": [...], "notes": [...]}

or, when tracing cannot start, a single ``{"status": "error", ...}`` line
(the program is then not run) and exit code 2. The parent turns the rows
into SQLite. A program that ends with ``os._exit`` skips the flush: its last
buffers are lost (the done line is missing and the parent says so).

Only the standard library, nodecast's pure record modules and
``nodecast.strict_json`` (standard library only) are imported here, so any
Python that can import nodecast (and cupti-python) can run it.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from typing import Any, TextIO

from nodecast.strict_json import dumps

STATUS_PREFIX = '{"status"'


def _line(obj: dict[str, Any]) -> str:
    """One JSON line, compact and strict (a number that is not finite is null; enum-like values by ``_plain``)."""
    return dumps(obj, separators=(",", ":"), default=_plain) + "\n"


def _write(f: TextIO, obj: dict[str, Any]) -> None:
    f.write(_line(obj))


def _plain(value: Any) -> Any:
    """JSON for values json cannot write (an enum-like or numpy integer from a record): int, else text."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return str(value)


def parse_args(argv: list[str]) -> tuple[str, list[str]]:
    """(records file, program argv) from ``--records FILE [--] PROGRAM...``."""
    if len(argv) < 2 or argv[0] != "--records":
        msg = "usage: python -m nodecast.record._inject --records FILE -- PROGRAM [ARGS...]"
        raise SystemExit(msg)
    records, rest = argv[1], argv[2:]
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest or (rest[0] == "-m" and len(rest) < 2):
        msg = "nodecast.record._inject: no program to run"
        raise SystemExit(msg)
    return records, rest


def run_program(program: list[str]) -> int:
    """Run ``program`` (a script path or ``-m module``) as ``__main__``; its exit code."""
    try:
        if program[0] == "-m":
            sys.argv = [program[1], *program[2:]]
            runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        else:
            script = program[0]
            sys.argv = list(program)
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException:  # noqa: BLE001 - the program's own error: report it, still write the trace
        traceback.print_exc()
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Trace and run the program; the program's exit code (2 when tracing cannot start)."""
    records_path, program = parse_args(list(sys.argv[1:] if argv is None else argv))
    from nodecast.errors import GPUUnavailableError
    from nodecast.record.activities import Converter

    with open(records_path, "w", encoding="utf-8", buffering=1 << 20) as f:
        pid = os.getpid()
        converter = Converter(pid=pid)

        def sink(rows: list[dict[str, Any]]) -> None:
            f.write("".join(_line(r) for r in rows))

        try:
            from nodecast.record.cupti import Tracer, cupti_version

            tracer = Tracer(converter, sink)
            tracer.start()
        except GPUUnavailableError as exc:
            _write(f, {"status": "error", "kind": "gpu-unavailable", "reason": exc.reason, "hint": exc.hint or ""})
            return 2
        with tracer.lock:
            _write(f, {"status": "started", "pid": pid, "cupti_python": cupti_version(), "program": program,
                       "python": sys.version.split()[0]})
            f.flush()
        code = run_program(program)
        try:
            tracer.stop()
        except Exception as exc:  # noqa: BLE001 - report; the rows already written stay usable
            tracer.notes.append(f"CUPTI flush failed: {type(exc).__name__}: {exc}")
        sys.stdout.flush()
        with tracer.lock:
            _write(f, {"status": "done", "exit_code": code, "kernel_names": sorted(tracer.kernel_names),
                       "skipped_kinds": {str(k): v for k, v in sorted(converter.skipped.items())},
                       "notes": tracer.notes})
    return code


if __name__ == "__main__":
    sys.exit(main())
