"""``load_trace``, ``load_api`` and ``load_run``: one entry point for every trace format nodecast reads.

``load_trace`` gives a file's GPU operations (``Trace``), ``load_api`` its
host API calls (``ApiCalls``), ``load_run`` both (a ``Run``) from one
detection of the format. The format is detected from the content, never the
extension, by asking each reader of ``traces.formats.READERS`` in turn:

======================  ==========================================================
first bytes             format
======================  ==========================================================
``SQLite format 3\\0``   nsys export (``StringIds`` + CUPTI tables) or nvprof
                        database (``StringTable`` + CUPTI tables)
``PAR1``                a Trace written by nodecast (``nodecast convert``: nodecast's
                        metadata in the schema), else an op table (columns ``op`` and
                        ``device`` or ``duration_s``; ``nodecast.traces.op_table``)
``\\x1f\\x8b`` (gzip)     Kineto / Chrome-trace JSON, compressed
``{`` or ``[``          Kineto / Chrome-trace JSON
text                    ``nvprof --print-gpu-trace --csv`` output, or an op table in CSV
                        (its header row names ``op`` and ``device`` or ``duration_s``)
======================  ==========================================================

``sample:<stem>`` names a sample shipped in ``nodecast/data/samples``.
Every problem a user can fix is an InputError naming the file, the reason
and what to do; nothing is ever unpickled or evaluated.
"""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from nodecast import out_of_memory, paths
from nodecast.errors import InputError
from nodecast.inputs import input_path, named_as
from nodecast.traces import formats
from nodecast.traces.api import ApiCalls
from nodecast.traces.kinds import OpKind
from nodecast.traces.reader import HEAD_BYTES, SQLITE, TEXT, Probe, Reader, Run
from nodecast.traces.trace import Trace, require_ops

SAMPLE_PREFIX = "sample:"
_SAMPLES_PACKAGE = "nodecast"
_SAMPLES_DIR = ("data", "samples")
_SAMPLE_SUFFIXES = (".nvvp", ".sqlite", ".json.gz", ".json", ".csv", ".parquet")

# Tables named in the error for a SQLite file that is no profiler export.
_EXPECTED_TABLES = (
    "nsys: StringIds with CUPTI_ACTIVITY_KIND_KERNEL/_MEMCPY/_RUNTIME; "
    "nvprof: StringTable with CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL/_MEMCPY/_RUNTIME"
)


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Read any supported trace file (or ``sample:<stem>``) into a Trace.

    Raises InputError when the file is missing, unreadable, of a format
    nodecast does not read, damaged, or holds no GPU operation.
    """
    with _opened(path) as (shown, file):
        _, trace = _read_trace(shown, file)
    return _require_gpu_work(trace, shown)


def load_api(path: str | os.PathLike[str]) -> ApiCalls:
    """The host API calls of any supported trace file (or ``sample:<stem>``): empty, with a note, for a format
    that records none. InputError as ``load_trace``."""
    with _opened(path) as (shown, file):
        with named_as(shown, file):
            reader = detect_reader(file)
        return _read_api(reader, shown, file)


def load_run(path: str | os.PathLike[str]) -> Run:
    """A trace file (or ``sample:<stem>``) read whole: its Trace (as ``load_trace``) and its host API calls (as
    ``load_api``), the format detected once."""
    with _opened(path) as (shown, file):
        reader, trace = _read_trace(shown, file)
        trace = _require_gpu_work(trace, shown)
        return Run(trace, _read_api(reader, shown, file))


@contextmanager
def _opened(path: str | os.PathLike[str]) -> Iterator[tuple[str | Path, Path]]:
    """(the name errors and sources show, a file the readers can open) of a trace path or ``sample:<stem>``;
    a sample's file lasts as long as the context."""
    text = os.fspath(path)
    with ExitStack() as stack:
        if text.startswith(SAMPLE_PREFIX):
            file = stack.enter_context(importlib.resources.as_file(sample_file(text[len(SAMPLE_PREFIX) :])))
            shown: str | Path = text
        else:
            # A device is refused and a pipe copied to a file once (nodecast.inputs): format detection reads its
            # start, the reader reads it again, and so does the host-record reader.
            file = input_path(text, what="trace")
            shown = Path(text)
        yield shown, file


def _read_trace(shown: str | Path, file: Path) -> tuple[Reader, Trace]:
    """The reader of ``file``'s format and the Trace it reads (its source named as ``shown``)."""
    out_of_memory.note_file(shown, file)  # named, with its size, if reading it runs out of memory
    with named_as(shown, file):  # errors about a pipe's copy name the pipe
        reader = detect_reader(file)
        trace = reader.read_trace(file)
    out_of_memory.note_gpu_ops(len(trace))
    if shown != file:
        trace.meta.source = str(shown)
    return reader, trace


def _read_api(reader: Reader, shown: str | Path, file: Path) -> ApiCalls:
    """The host API calls ``reader`` reads from ``file`` (their source named as ``shown``)."""
    with named_as(shown, file):
        api = reader.read_api(file)
    if shown != file:
        api.meta.source = str(shown)
    return api


def _samples_root() -> Traversable:
    root = importlib.resources.files(_SAMPLES_PACKAGE)
    for part in _SAMPLES_DIR:
        root = root / part
    return root


def list_samples() -> list[str]:
    """Stems of the sample traces shipped with nodecast (use as ``sample:<stem>``)."""
    stems = []
    for entry in _samples_root().iterdir():
        for suffix in _SAMPLE_SUFFIXES:
            if entry.name.endswith(suffix):
                stems.append(entry.name[: -len(suffix)])
                break
    return sorted(stems)


def sample_file(stem: str) -> Traversable:
    """The packaged sample file named ``stem`` (with or without its extension)."""
    root = _samples_root()
    for name in (stem, *(stem + s for s in _SAMPLE_SUFFIXES)):
        candidate = root / name
        if name and (paths.names_a_file(candidate) if isinstance(candidate, Path) else candidate.is_file()):
            return candidate
    available = ", ".join(list_samples()) or "none"
    raise InputError(
        f"no sample trace named {stem!r}",
        path=f"{SAMPLE_PREFIX}{stem}",
        hint=f"Available samples: {available}",
    )


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name of the reader for a file, from its content: nsys, nvprof, kineto, nvprof-csv, parquet, arrow or
    op-table (``traces.formats``)."""
    return detect_reader(path).name


def detect_reader(path: str | os.PathLike[str]) -> Reader:
    """The reader of a file's format (the first of ``traces.formats.READERS`` that claims its start);
    InputError for an empty or unreadable file, and for one no reader claims, saying what it looks like."""
    path = input_path(path, what="trace")  # a device refused, a pipe read through its copy (nodecast.inputs)
    if not paths.exists(path):
        raise InputError("no such file", path=path, hint="Check the path")
    if path.is_dir():
        raise InputError("a folder, not a trace file", path=path, hint="Give the path of one trace file")
    try:
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    if not head:
        # Say so rather than "not a trace format": an empty file is usually an interrupted write.
        raise InputError(
            "the file is empty (0 bytes)",
            path=path,
            hint="The profiler or copy may have been interrupted; export or copy the trace again",
        )
    probe = Probe(path, head)
    for reader in formats.READERS:
        if reader.claims(probe):
            return reader
    raise _refusal(probe)


def _refusal(probe: Probe) -> InputError:
    """Why no reader claims a file: a SQLite database that is no profiler export, a CSV nodecast wrote or an
    Nsight Compute CSV (each in its own words), else not a trace format nodecast reads."""
    path = probe.path
    if probe.container == SQLITE:
        cupti = sorted(t for t in probe.tables if t.startswith("CUPTI_ACTIVITY_KIND_"))
        found = f"it has {len(cupti)} CUPTI tables but no string table" if cupti else "it has no CUPTI tables"
        return InputError(
            f"a SQLite database but not a profiler export ({found}; expected {_EXPECTED_TABLES})",
            path=path,
            hint="Export Nsight Systems reports with `nsys export --type sqlite`, or use an nvprof -o database",
        )
    if probe.container == TEXT:
        sample = probe.text
        if sample.startswith("kind,copy_kind,src_mem,dst_mem,bytes,start_ns"):
            return InputError(
                "a CSV written by `nodecast convert`: it is meant for spreadsheets and other tools, not read back",
                path=path,
                hint="Convert the original trace to .arrow or .parquet instead, which nodecast reloads",
            )
        if '"ID","Process ID"' in sample:
            return InputError(
                "an Nsight Compute metrics CSV: it holds per-kernel metrics, not a timeline of GPU operations",
                path=path,
                hint="Load a timeline trace (nsys, nvprof, Kineto) here",
            )
    return InputError(
        "not a trace format nodecast reads",
        path=path,
        hint=_hint_for(path),
    )


def _hint_for(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".nsys-rep", ".qdrep")):
        return (
            f"This is an Nsight Systems report; export it with `nsys export --type sqlite {path.name}`"
            " and load the .sqlite file"
        )
    if name.endswith(".ncu-rep"):
        return "This is an Nsight Compute report, which holds no timeline"
    return (
        "nodecast reads nsys SQLite exports, nvprof databases (.nvvp), Kineto/PyTorch-profiler JSON (.json, .json.gz), "
        "nvprof --print-gpu-trace --csv output, op tables (CSV or Parquet with columns device, op, duration_s) "
        "and its own Arrow and Parquet files"
    )


def _require_gpu_work(trace: Trace, path: str | Path) -> Trace:
    """InputError (via ``require_ops``) unless the trace has a kernel, copy or memset."""
    if len(trace) and not np.any(trace["kind"] != OpKind.SYNC):
        require_ops(trace.take(slice(0, 0)), path)  # synchronizations alone are no GPU work
    return require_ops(trace, path)
