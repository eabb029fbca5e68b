"""``nodecast record``: a CUPTI trace of a Python GPU program, written like an ``nsys export`` SQLite file.

The program runs in a child process started as
``python -m nodecast.record._inject --records TMP -- program.py args``:
``_inject`` enables CUPTI activity tracing (``nodecast.record.cupti``),
runs the program with ``runpy``, flushes CUPTI and leaves the rows in a
JSON-lines file. This process then demangles the kernel names (one
``c++filt`` call) and writes the SQLite file atomically
(``sqlite_writer.write_trace``), in the tables and columns of an Nsight
Systems export, so ``nodecast.traces.load.load_trace`` reads it like one.

Only Python programs can be recorded this way (cupti-python traces the
process it is imported in). For a compiled CUDA program use
``nsys profile -t cuda`` and ``nsys export --type sqlite``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nodecast import __version__, _signals, paths
from nodecast.errors import GPUUnavailableError, InputError
from nodecast.record.activities import short_name
from nodecast.record.sqlite_writer import TABLES, write_trace

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$")
#: Interpreter options that take a value (``-X dev``, ``-W ignore``).
_OPTION_WITH_VALUE = {"-X", "-W", "-Q"}
_USAGE = "Usage: nodecast record -o trace.sqlite -- python program.py [args]"
_NSYS_HINT = "For other programs use `nsys profile -t cuda -o rep PROGRAM` and `nsys export --type sqlite rep.nsys-rep`"


@dataclass(frozen=True)
class ChildCommand:
    """How the child is started: interpreter, its options, and the program (script or ``-m module``) with args."""

    interpreter: str
    options: tuple[str, ...]
    program: tuple[str, ...]

    def argv(self, records: str) -> list[str]:
        """The child's command line."""
        return [self.interpreter, *self.options, "-m", "nodecast.record._inject", "--records", records, "--",
                *self.program]


def parse_command(command: Sequence[str]) -> ChildCommand:
    """Split ``python [options] script.py args`` / ``python -m mod args`` / ``script.py args``.

    Raises InputError for an empty command, ``python -c``, or a program that
    is not Python.
    """
    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise InputError("no program to record", key="COMMAND", hint=_USAGE)
    first = cmd[0]
    if _PYTHON.match(Path(first).name):
        interpreter, rest = first, cmd[1:]
    elif first.endswith(".py"):
        interpreter, rest = sys.executable, cmd
    else:
        raise InputError(f"{first!r} is not a Python program: nodecast record traces Python programs (through cupti-python)",
                         key="COMMAND", hint=_NSYS_HINT)
    options: list[str] = []
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-m":
        if rest[i] == "-c":
            raise InputError("python -c is not supported", key="COMMAND", hint="Put the code in a file and record that")
        if rest[i] in _OPTION_WITH_VALUE and i + 1 < len(rest):
            options += rest[i : i + 2]
            i += 2
            continue
        options.append(rest[i])
        i += 1
    program = rest[i:]
    if not program or (program[0] == "-m" and len(program) < 2):
        raise InputError("no Python script or -m module after the interpreter", key="COMMAND", hint=_USAGE)
    if program[0] != "-m" and not paths.is_file(program[0], "COMMAND"):
        raise InputError("no such file", path=program[0], hint="Give the path of the Python script to record")
    return ChildCommand(interpreter, tuple(options), tuple(program))


#: Extensions the SQLite trace may be written under (nodecast reads it by content; these say what it is).
OUTPUT_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def check_output(path: str | os.PathLike[str]) -> Path:
    """InputError unless ``path`` can be written (its folder exists and is writable; it is not a folder)
    and names a SQLite file (``OUTPUT_SUFFIXES``): a trace.json or trace.xyz would hold SQLite anyway.
    """
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    if paths.is_dir(out, "-o"):
        raise InputError("is a folder", path=out, hint="Give a file name for the trace, e.g. trace.sqlite")
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"the trace is written as SQLite, not as {out.suffix or 'a file without extension'}",
                         path=out, key="-o", hint=f"Name it with one of {', '.join(OUTPUT_SUFFIXES)}, e.g. trace.sqlite")
    if not folder.is_dir():
        raise InputError("folder does not exist", path=folder, hint="Create it or choose another output path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError("cannot write here (permission denied)", path=out, hint="Choose a writable output path")
    return out


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Mangled -> demangled C++ names with one ``c++filt`` call; identity when c++filt is missing or fails."""
    names = [n for n in names if n]
    exe = shutil.which("c++filt")
    if not names or exe is None:
        return {n: n for n in names}
    try:
        out = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60, check=True)
        lines = out.stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    if len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines, strict=True))


@dataclass
class RecordResult:
    """What a recording produced: the program's exit code, rows per table, notes."""

    exit_code: int
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cupti_version: str = ""


def _status_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.startswith('{"status"'):
                out.append(json.loads(line))
    return out


def _rows(path: Path, names: dict[str, str]) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.startswith('{"status"'):
                continue
            row = json.loads(line)
            if row.get("table") == "KERNEL":
                mangled = row.get("mangledName") or ""
                dem = names.get(mangled, mangled)
                row["demangledName"] = dem
                row["shortName"] = short_name(dem) if dem else ""
            yield row


def convert_records(records: Path, output: Path, *, command: Sequence[str] = ()) -> RecordResult:
    """Turn the child's JSON-lines records into the SQLite trace at ``output`` (atomically).

    Raises GPUUnavailableError when the child could not start tracing, and
    InputError when it left no records at all.
    """
    statuses = _status_lines(records) if records.exists() else []
    if not statuses:
        raise InputError(
            "the child process left no trace records: it could not start nodecast's CUPTI injector",
            key="nodecast record",
            hint="Run the program with a Python that has nodecast and cupti-python installed (see its error above)",
        )
    first = statuses[0]
    if first.get("status") == "error":
        raise GPUUnavailableError(first.get("reason", "CUPTI could not start"), hint=first.get("hint") or None)
    done = next((s for s in statuses if s.get("status") == "done"), None)
    notes: list[str] = []
    if done is None:
        notes.append("the program ended without CUPTI's final flush (os._exit or a crash): the last GPU activity may be missing")
        done = {"exit_code": 1, "kernel_names": [], "notes": []}
    notes += list(done.get("notes", []))
    skipped = done.get("skipped_kinds") or {}
    if skipped:
        notes.append("activity records not written (CUPTI kind: count): " + ", ".join(f"{k}: {v}" for k, v in skipped.items()))
    names = demangle(done.get("kernel_names", []))
    if shutil.which("c++filt") is None and names:
        notes.append("c++filt not found: kernel names are left mangled")
    meta = {
        "EXPORT_PRODUCT_NAME": "nodecast record",
        "NODECAST_VERSION": __version__,
        "CUPTI_PYTHON_VERSION": str(first.get("cupti_python", "unknown")),
        "COMMAND": " ".join(command),
        "EXPORT_TIME_UTC": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        "NODECAST_NOTES": " | ".join(notes),
    }
    pid = int(first.get("pid", 0))
    program = first.get("program") or ["python"]
    counts = write_trace(_rows(records, names), output, meta=meta, processes={pid: " ".join(program)})
    return RecordResult(int(done.get("exit_code", 0)), counts, notes, str(first.get("cupti_python", "")))


def record(command: Sequence[str], output: str | os.PathLike[str]) -> RecordResult:
    """Run ``command`` (a Python program) under CUPTI and write its trace to ``output``.

    The output folder is checked first; nothing is written at ``output``
    unless the whole trace is. The program's stdin/stdout/stderr are this
    process's. Raises GPUUnavailableError when cupti-python, the driver or a
    GPU is missing, InputError for a bad command or output path.
    """
    out = check_output(output)
    child = parse_command(command)
    if Path(child.interpreter).resolve() == Path(sys.executable).resolve():
        import importlib.util

        if importlib.util.find_spec("cupti") is None:
            from nodecast.record.cupti import INSTALL_HINT

            raise GPUUnavailableError("cupti-python is not installed", hint=INSTALL_HINT)
    with tempfile.TemporaryDirectory(prefix="nodecast-record-") as tmp:
        records = Path(tmp) / "records.jsonl"
        try:
            proc = subprocess.Popen(child.argv(str(records)))
        except OSError as exc:
            raise InputError(f"cannot start {child.interpreter!r} ({exc.strerror})", key="COMMAND") from None
        try:
            proc.wait()
        except KeyboardInterrupt as exc:
            signum = getattr(exc, "signum", signal.SIGINT)
            if signum != signal.SIGINT:
                # SIGTERM (timeout, Slurm) or SIGHUP stops nodecast as well: no trace (exit 143, 129). The program
                # gets the signal too, in case it was sent to nodecast alone.
                proc.send_signal(signum)
                proc.wait()
                raise
            proc.wait()  # Ctrl-C reached the program too: it flushes its trace, which is still written
            _signals.forget()
        result = convert_records(records, out, command=list(command))
        if proc.returncode not in (0, result.exit_code):
            result.notes.append(f"the child process exited with {proc.returncode}")
        return result


def summary(result: RecordResult) -> str:
    """``120 kernels, 40 memcpy, 0 memsets, 3 syncs, 500 API calls``."""
    c = result.counts
    parts = [(TABLES["KERNEL"], "kernels"), (TABLES["MEMCPY"], "memcpy"), (TABLES["MEMSET"], "memsets"),
             (TABLES["SYNCHRONIZATION"], "syncs"), (TABLES["RUNTIME"], "API calls")]
    return ", ".join(f"{c.get(t, 0)} {label}" for t, label in parts)
