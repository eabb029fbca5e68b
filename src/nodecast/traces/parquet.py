"""Write and read a Trace as Parquet (nodecast's own columnar file), and export CSV.

The Parquet file holds the Trace columns exactly as they are (same names,
same integer dtypes, timestamps in integer ns, ``MISSING_NS`` for absent API
times) plus, in the schema metadata under the key ``nodecast``, a JSON
object with the kernel names and the TraceMeta::

    {"version": 2, "names": ["Fan1(...)", ...],
     "meta": {"source": ..., "format": ..., "profiler": ..., "gpus": {"0": "Tesla T4"}, "notes": [...]}}

Format versions: 2 added the occupancy columns (``registers_per_thread``,
``static_smem_bytes``, ``dynamic_smem_bytes``, ``local_mem_per_thread_bytes``);
3 added what an op computes (``WORK_COLUMNS``: ``op_class``, ``dtype``,
``flops``, ``work_bytes``, ``batch``, ``m``, ``n``, ``k``, ``gpus``); 4 the
collective columns (``COLLECTIVE_COLUMNS``: ``algorithm``, ``protocol``). A
trace without collectives (``records_collectives``) is still written as
version 3, without those two columns, byte for byte as before they existed;
one with collectives as version 4. A version-1 file is still read: its
occupancy columns come back ``NOT_RECORDED``, with a note saying so; a
version-1, 2 or 3 file's work and collective columns come back not recorded
without a note (no reader of those versions recorded them), and its NCCL
kernels get what their names say (``collectives.from_names``), as a trace
read now would. Any other version is refused with a message naming it.

Reading back checks what an edited or foreign file could break: every column
must be integers that fit its dtype (``flops`` and ``work_bytes``: floats),
enum codes must name an enum member, and no op may end before it starts or
move negative bytes (InputError naming the column).

CSV is for people and spreadsheets: enums decoded to labels, names spelled
out, absent API times left empty (``Trace.to_pandas()``); it is not read back.
Every write goes through a temporary file renamed into place.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nodecast.decoding import decoder_limits
from nodecast.errors import InputError
from nodecast.fileio import atomic_path
from nodecast.machines.device_properties import GpuProperties
from nodecast.strict_json import dumps
from nodecast.traces import _common
from nodecast.traces.collectives import from_names
from nodecast.traces.kinds import TRACE_KINDS, CopyKind, MemKind, OpKind
from nodecast.traces.reader import ARROW, PARQUET, Reader, without_api
from nodecast.traces.trace import (
    COLLECTIVE_COLUMNS,
    COLUMNS,
    OCCUPANCY_COLUMNS,
    WORK_COLUMNS,
    Trace,
    TraceMeta,
    default_column,
    records_collectives,
)

# Enum columns, the enum their codes index and how many of its codes a Trace uses: a code outside them would fail
# far from the file (a graph's host kinds, OpKind.API and WAIT, are no Trace row).
_ENUM_COLUMNS = {"kind": (OpKind, len(TRACE_KINDS)), "copy_kind": (CopyKind, len(CopyKind)),
                 "src_mem": (MemKind, len(MemKind)), "dst_mem": (MemKind, len(MemKind))}

#: Key of nodecast's JSON in the Parquet schema metadata.
METADATA_KEY = b"nodecast"
FORMAT_VERSION = 4
#: The version of a trace without collectives: version 3's columns and bytes exactly.
WITHOUT_COLLECTIVES_VERSION = 3
#: Older versions this nodecast still reads, with the columns each lacks (read back as their defaults).
READABLE_VERSIONS: dict[int, tuple[str, ...]] = {1: (*OCCUPANCY_COLUMNS, *WORK_COLUMNS), 2: WORK_COLUMNS,
                                                 3: COLLECTIVE_COLUMNS, FORMAT_VERSION: ()}
#: Columns of floating-point values (NaN: unknown); every other column holds integers.
FLOAT_COLUMNS = tuple(name for name, dtype in COLUMNS.items() if dtype.kind == "f")


def _properties(doc: dict) -> GpuProperties:
    """A device's recorded properties from the metadata (what ``machines.device_properties`` keeps); a value of
    the wrong type is a damaged file (ValueError, turned into one line by the caller)."""
    target, sms, memory = doc.get("target"), doc.get("sms"), doc.get("memory_bytes")
    if not (target is None or isinstance(target, str)) or not all(
            v is None or (type(v) is int and v > 0) for v in (sms, memory)):
        raise ValueError(f"gpu_properties {doc!r}")
    return GpuProperties(target=target, sms=sms, memory_bytes=memory)


def _arrow_table(trace: Trace) -> pa.Table:
    """The Trace as an Arrow table with nodecast's JSON in the schema metadata (version 4 with the collective
    columns for a trace with collectives, else version 3 without them)."""
    meta = trace.meta
    collectives = records_collectives(trace)
    columns = [c for c in COLUMNS if collectives or c not in COLLECTIVE_COLUMNS]
    doc = {
        "version": FORMAT_VERSION if collectives else WITHOUT_COLLECTIVES_VERSION,
        "names": trace.names,
        "meta": {
            "source": meta.source,
            "format": meta.format,
            "profiler": meta.profiler,
            "gpus": {str(k): v for k, v in meta.gpus.items()},
            "gpu_properties": {str(k): {"target": p.target, "sms": p.sms, "memory_bytes": p.memory_bytes}
                               for k, p in meta.gpu_properties.items()},
            "notes": list(meta.notes),
        },
    }
    arrays = [pa.array(trace[name]) for name in columns]
    schema = pa.schema(
        [pa.field(name, arr.type) for name, arr in zip(columns, arrays, strict=True)],
        metadata={METADATA_KEY: dumps(doc).encode()},
    )
    return pa.Table.from_arrays(arrays, schema=schema)


def write_parquet(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` to a Parquet file (zstd-compressed), replacing it atomically."""
    with atomic_path(path) as tmp:
        pq.write_table(_arrow_table(trace), tmp, compression="zstd")


def write_arrow(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` as an uncompressed Arrow IPC file (nodecast's fast trace cache), atomically.

    One record batch, so that reading it back memory-maps every column with no
    copy and no decoding: the fastest way to reload a large trace (Parquet is
    smaller on disk and opens in more tools).
    """
    table = _arrow_table(trace)
    with atomic_path(path) as tmp, pa.OSFile(str(tmp), "wb") as sink, \
            pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(len(trace), 1))


def read_arrow(path: str | Path) -> Trace:
    """Read an Arrow IPC file written by ``write_arrow`` (memory-mapped, zero-copy)."""
    path = Path(path)
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read the Arrow file ({exc})", path=path, hint="The file may be truncated") from None
    return _from_table(table, path, "Arrow")


def read_parquet(path: str | Path) -> Trace:
    """Read a Parquet file written by ``write_parquet``; InputError for any other Parquet file."""
    path = Path(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read the Parquet file ({exc})", path=path, hint="The file may be truncated") from None
    return _from_table(table, path, "Parquet")


#: The formats' readers (``traces.formats``). Every Parquet file the op-table reader does not claim is taken for
#: nodecast's (its reader refuses any other in its own words); neither records host calls.
PARQUET_READER = Reader("parquet", lambda probe: probe.container == PARQUET, read_parquet,
                        without_api("parquet", "a nodecast Parquet trace"))
ARROW_READER = Reader("arrow", lambda probe: probe.container == ARROW, read_arrow,
                      without_api("arrow", "a nodecast Arrow trace"))


def _from_table(table: pa.Table, path: Path, kind: str) -> Trace:
    """A Trace from a table written by nodecast (Parquet or Arrow IPC)."""
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise InputError(
            f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind} file not written by nodecast (no 'nodecast' schema metadata)",
            path=path,
            hint=f"nodecast reads back only the {kind} files that `nodecast convert` writes",
        )
    try:
        with decoder_limits(path, "nodecast trace metadata"):
            doc = json.loads(raw)
        names = [str(s) for s in doc["names"]]
        m = doc["meta"]
        meta = TraceMeta(
            source=str(m.get("source", "")),
            format=str(m.get("format", "")),
            profiler=str(m.get("profiler", "")),
            gpus={int(k): str(v) for k, v in m.get("gpus", {}).items()},
            notes=[str(s) for s in m.get("notes", [])],
            gpu_properties={int(k): _properties(v) for k, v in m.get("gpu_properties", {}).items()},
        )
    except InputError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"damaged nodecast metadata in the {kind} file ({exc})", path=path) from None
    version = doc.get("version", FORMAT_VERSION)
    if type(version) is not int or version not in READABLE_VERSIONS:
        versions = [str(v) for v in sorted(READABLE_VERSIONS)]
        readable = ", ".join(versions[:-1]) + f" and {versions[-1]}"
        raise InputError(
            f"written in nodecast trace format version {version!r}; this nodecast reads versions {readable}",
            path=path,
            hint="Convert the original trace again with this nodecast, or upgrade nodecast",
        )
    absent = READABLE_VERSIONS[version]
    missing = [c for c in COLUMNS if c not in table.column_names and c not in absent]
    if missing:
        raise InputError(f"the {kind} file lacks trace columns {missing}", path=path)
    lost = [c for c in absent if c in OCCUPANCY_COLUMNS]  # work columns were never recorded before version 3
    if lost:
        meta.notes.append(f"written in nodecast trace format version {version}, which has no {', '.join(lost)} "
                          "columns: they read as not recorded (-1)")
    cols: dict[str, np.ndarray] = {}
    for name, dtype in COLUMNS.items():
        if name in absent and name not in table.column_names:
            cols[name] = default_column(name, table.num_rows)
            continue
        column = table.column(name)
        if column.null_count:
            raise InputError(f"column {name!r} has empty values", path=path)
        if name in FLOAT_COLUMNS:
            cols[name] = _floats(column, name, dtype, path, kind)
        else:
            cols[name] = _integers(column, name, dtype, path, kind)
        if name in WORK_COLUMNS and _all_default(cols[name], name):
            cols[name] = default_column(name, table.num_rows)  # as the reader that wrote it held it: no bytes per op
    del table
    ids = cols["name_id"]
    if len(ids) and (ids.min() < -1 or ids.max() >= len(names)):
        raise InputError("name_id values point outside the stored names", path=path)
    for name, (enum, count) in _ENUM_COLUMNS.items():
        codes = cols[name]
        if len(codes) and (codes.min() < 0 or codes.max() >= count):
            raise InputError(
                f"column {name!r} holds codes outside 0..{count - 1} ({enum.__name__})",
                path=path,
                hint=f"nodecast reads back only the {kind} files that `nodecast convert` writes",
            )
    if version < FORMAT_VERSION:  # written before NCCL kernel names were read, or without collectives
        from_names(cols, names, meta.notes)
    _common.check_ops(cols, str(path))
    return Trace.from_columns(cols, names, meta)


def _all_default(values: np.ndarray, name: str) -> bool:
    """Whether every value of column ``name`` is its default (NaN for the float columns)."""
    default = default_column(name, 1)[0]
    if values.dtype.kind == "f" and np.isnan(default):
        return bool(np.isnan(values).all())
    return bool((values == default).all())


def _floats(column: pa.ChunkedArray, name: str, dtype: np.dtype, path: Path, kind: str) -> np.ndarray:
    """A float column as ``dtype``; InputError when it holds anything but numbers (``_integers``' floats twin).

    NaN is a value here ("unknown"); negative and infinite values are refused
    with the other columns' checks (``_common.check_ops``).
    """
    if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
        raise InputError(
            f"column {name!r} holds {column.type} values where {dtype} numbers belong",
            path=path,
            hint=f"nodecast reads back only the {kind} files that `nodecast convert` writes",
        )
    return column.to_numpy().astype(dtype, copy=False)


def _integers(column: pa.ChunkedArray, name: str, dtype: np.dtype, path: Path, kind: str) -> np.ndarray:
    """A column as ``dtype``; InputError when it is not integers or holds values ``dtype`` cannot.

    nodecast writes every column as its own integer type, so this is a no-op
    cast for its files. Anything else (text, floats, a wider type with values
    that would wrap) is a foreign or edited file.
    """
    if not pa.types.is_integer(column.type):
        raise InputError(
            f"column {name!r} holds {column.type} values where {dtype} integers belong",
            path=path,
            hint=f"nodecast reads back only the {kind} files that `nodecast convert` writes",
        )
    values = column.to_numpy()
    if values.dtype != dtype and len(values):
        info = np.iinfo(dtype)
        # Compare as Python ints: a uint64 maximum does not fit an int64 comparison.
        low, high = int(values.min()), int(values.max())
        if low < info.min or high > info.max:
            raise InputError(
                f"column {name!r} holds values out of range for {dtype} ({low}..{high}; allowed {info.min}..{info.max})",
                path=path,
                hint=f"nodecast reads back only the {kind} files that `nodecast convert` writes",
            )
    return values.astype(dtype, copy=False)


def to_csv(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` as CSV with decoded labels (``Trace.to_pandas()``), replacing it atomically."""
    df = trace.to_pandas(decode=True)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
