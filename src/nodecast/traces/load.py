"""``load_trace``: one entry point for every trace format nodecast reads.

The format is detected from the content, never the extension:

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
from contextlib import ExitStack
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from nodecast import out_of_memory, paths
from nodecast.errors import InputError
from nodecast.inputs import input_path, named_as
from nodecast.traces import kineto, nsys, nvprof, nvprof_csv, op_table, parquet
from nodecast.traces._sqlite import SQLITE_MAGIC, SqliteExport
from nodecast.traces.kinds import OpKind
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
    text = os.fspath(path)
    with ExitStack() as stack:
        if text.startswith(SAMPLE_PREFIX):
            file = stack.enter_context(importlib.resources.as_file(sample_file(text[len(SAMPLE_PREFIX) :])))
            shown: str | Path = text
        else:
            # A device is refused and a pipe copied to a file once (nodecast.inputs): format detection reads its
            # start, the reader reads it again, and so does the host-record reader (graph.api_readers).
            file = input_path(text, what="trace")
            shown = Path(text)
        out_of_memory.note_file(shown, file)  # named, with its size, if reading it runs out of memory
        with named_as(shown, file):  # errors about a pipe's copy name the pipe
            trace = _read(file)
        out_of_memory.note_gpu_ops(len(trace))
        if shown != file:
            trace.meta.source = str(shown)
    return _require_gpu_work(trace, shown)


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
    op-table."""
    path = input_path(path, what="trace")  # a device refused, a pipe read through its copy (nodecast.inputs)
    if not paths.exists(path):
        raise InputError("no such file", path=path, hint="Check the path")
    if path.is_dir():
        raise InputError("a folder, not a trace file", path=path, hint="Give the path of one trace file")
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    if not head:
        # Say so rather than "not a trace format": an empty file is usually an interrupted write.
        raise InputError(
            "the file is empty (0 bytes)",
            path=path,
            hint="The profiler or copy may have been interrupted; export or copy the trace again",
        )
    if head.startswith(SQLITE_MAGIC):
        with SqliteExport(path) as db:
            tables = db.tables
        if nvprof.is_nvprof(tables):
            return "nvprof"
        if nsys.is_nsys(tables):
            return "nsys"
        cupti = sorted(t for t in tables if t.startswith("CUPTI_ACTIVITY_KIND_"))
        found = f"it has {len(cupti)} CUPTI tables but no string table" if cupti else "it has no CUPTI tables"
        raise InputError(
            f"a SQLite database but not a profiler export ({found}; expected {_EXPECTED_TABLES})",
            path=path,
            hint="Export Nsight Systems reports with `nsys export --type sqlite`, or use an nvprof -o database",
        )
    if head.startswith(parquet.PARQUET_MAGIC):
        return _parquet_kind(path)
    if head.startswith(parquet.ARROW_MAGIC):
        return "arrow"
    if head.startswith(kineto.GZIP_MAGIC):
        return "kineto"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "kineto"
    if b"\x00" not in head:
        sample = head.decode("utf-8", errors="replace")
        if nvprof_csv.looks_like_nvprof_csv(sample):
            return "nvprof-csv"
        if op_table.looks_like_op_table_csv(sample):
            return op_table.FORMAT
        if sample.startswith("kind,copy_kind,src_mem,dst_mem,bytes,start_ns"):
            raise InputError(
                "a CSV written by `nodecast convert`: it is meant for spreadsheets and other tools, not read back",
                path=path,
                hint="Convert the original trace to .arrow or .parquet instead, which nodecast reloads",
            )
        if '"ID","Process ID"' in sample:
            raise InputError(
                "an Nsight Compute metrics CSV: it holds per-kernel metrics, not a timeline of GPU operations",
                path=path,
                hint="Load a timeline trace (nsys, nvprof, Kineto) here",
            )
    raise InputError(
        "not a trace format nodecast reads",
        path=path,
        hint=_hint_for(path),
    )


#: Columns of the shared corpora's raw files (../shared/data/cross-gpu), which op_table converts.
_CORPORA = {"neusight": ({"OPName", "Latency", "Device"}, "from_neusight"),
            "aiconfigurator": ({"latency", "device", "system"}, "from_aiconfigurator")}


def _parquet_kind(path: Path) -> str:
    """``parquet`` (a Trace nodecast wrote, or a file its reader refuses in its own words) or ``op-table``.

    Only the schema is read. A raw NeuSight or AIConfigurator file (one table
    of many GPUs, latencies in milliseconds) is an InputError saying how to
    make op tables of it.
    """
    import pyarrow as pa  # noqa: PLC0415 (pyarrow loads only for Parquet files)
    import pyarrow.parquet as pq  # noqa: PLC0415

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError):
        return "parquet"  # damaged: read_parquet says so
    if parquet.METADATA_KEY in (schema.metadata or {}):
        return "parquet"
    if op_table.is_op_table_header(schema.names):
        return op_table.FORMAT
    for corpus, (columns, function) in _CORPORA.items():
        if columns <= set(schema.names):
            raise InputError(
                f"a raw {corpus} measurement file (latencies in milliseconds, several GPUs per file), not a trace "
                "or an op table",
                path=path,
                hint=f"Write one op table per GPU with nodecast.traces.op_table.{function} and write_op_tables "
                     "(docs/inputs.md, Op tables)",
            )
    return "parquet"


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


_READERS = {
    "nsys": nsys.read_nsys,
    "nvprof": nvprof.read_nvprof,
    "kineto": kineto.read_kineto,
    "nvprof-csv": nvprof_csv.read_nvprof_csv,
    "parquet": parquet.read_parquet,
    "arrow": parquet.read_arrow,
    op_table.FORMAT: op_table.read_op_table,
}


def _read(path: Path) -> Trace:
    return _READERS[detect_format(path)](path)


def _require_gpu_work(trace: Trace, path: str | Path) -> Trace:
    """InputError (via ``require_ops``) unless the trace has a kernel, copy or memset."""
    if len(trace) and not np.any(trace["kind"] != OpKind.SYNC):
        require_ops(trace.take(slice(0, 0)), path)  # synchronizations alone are no GPU work
    return require_ops(trace, path)
