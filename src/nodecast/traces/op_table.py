"""Op tables: per-op measurements (a microbenchmark sweep, a public corpus) read like a trace.

An op table is a CSV or Parquet file with one row per measured op. Columns
(names are case-insensitive; blanks around values are ignored; an empty
cell is "not recorded"):

================  ==========  ===============================================================  ========
column            unit        meaning                                                          required
================  ==========  ===============================================================  ========
``device``        text        the GPU's name as the driver reports it (``NVIDIA H100 80GB        yes
                              HBM3``, ``Tesla T4``): it picks the data sheet
``op``            text        gemm, bmm, linear, conv, elementwise, softmax, layernorm,         yes
                              reduction, attention, copy, all_reduce, all_gather,
                              reduce_scatter, all_to_all, send_recv, broadcast, reduce
                              (``OpClass``; other spellings in ``OP_ALIASES``: matmul, ln...)
``duration_s``    s           the op's measured time on the GPU                                  yes
``dtype``         text        fp64, fp32, tf32, bf16, fp16, fp8, fp8_block, nvfp4, fp4, int8,   no
                              int4 (``DType``; also float32, bfloat16, half...)
``batch``         count       independent problems of one op (bmm; linear: its batch)            no
``m, n, k``       elements    GEMM C[m,n] = A[m,k] B[k,n]; an op over a (B, H) tensor            no
                              (elementwise, softmax, layernorm, reduction): m = B rows, n = H
``flops``         FLOP        the op's arithmetic; default: from its shape (below)                no
``bytes``         B           copy: bytes copied; other ops: the least bytes the op reads and    no
                              writes in DRAM; default: from its shape (below)
``name``          text        the kernel's name; default: built from op, dtype and shape         no
                              (``gemm_bf16_m4096_n4096_k4096``)
``grid_x..z``     blocks      the launch grid                                                     no
``block_x..z``    threads     the block                                                           no
``registers``     count       32-bit registers per thread                                        no
``shared_bytes``  B           shared memory per block (static and dynamic)                       no
``gpus``          count       GPUs in a collective's group                                       no
``message_bytes`` B           a collective's message size (nccl-tests' size)                     no
================  ==========  ===============================================================  ========

Other columns are not read (the trace's notes name them). Each row becomes
one Trace row: a kernel (``OpKind.KERNEL``) with its ``op_class``,
``dtype`` and shape, a ``copy`` a device-to-device memcpy of ``bytes``, a
collective a kernel whose ``bytes`` is its message size. Rows with no
``batch`` but a shape have batch 1.

What the op computes where the table does not say (``with_work``; e: the
dtype's element size in bytes, b: batch; every operand in the op's dtype,
so an fp8 GEMM writing bf16 is counted at 1 byte per output element):

==================================  ===================  ====================================================
op                                  flops (FLOP)         bytes (B, least DRAM traffic)
==================================  ===================  ====================================================
gemm, bmm                           2·b·m·n·k            e·b·(m·k + k·n + m·n)
linear (b problems share B[k,n])    2·b·m·n·k            e·(b·m·k + k·n + b·m·n)
conv (m, n, k of its implicit GEMM) 2·b·m·n·k            not computed: the implicit GEMM reads each input
                                                         element once per filter tap; give ``bytes``
elementwise                         b·m·n (n absent: 1)  2·e·b·m·n (one tensor in, one out; a binary op
                                                         reads two: give ``bytes``)
softmax                             5·b·m·n              2·e·b·m·n
layernorm                           8·b·m·n              2·e·b·m·n (the 2·n weights left out)
reduction (each row of m to one)    b·m·n                e·b·(m·n + m)
attention (b = batch·heads, m       4·b·m·n·k            e·b·(2·m·k + 2·n·k) (Q, K, V, O)
queries, n keys, k head size)
copy                                0                    2·bytes (read once, written once)
collectives                         not computed         not computed
==================================  ===================  ====================================================

Decisions:

- A trace is one run on one node, and ``project``, ``forecast`` and
  ``evaluate`` pick one data sheet from its GPU name: an op table whose rows
  name several ``device`` values is refused (``read_op_table`` with
  ``device=`` picks one of them; ``write_op_tables`` writes one file per
  GPU). Its GPU is device 0 (``meta.gpus``).
- The ops are laid back to back on one stream in row order: the first
  starts at 0 and each starts where the previous ended. An op table records
  no overlap and no host time, so the trace's timeline (its end to end) is
  the sum of its durations, which the trace's notes say. Durations are
  rounded to whole nanoseconds.
- ``duration_s`` must be a finite number >= 0 and at most ``MAX_DURATION_S``;
  shapes, launch sizes and counts whole numbers >= 0 (batch and gpus >= 1);
  ``flops`` and ``bytes`` finite and >= 0. A value that is not (text in a
  number column, a negative or NaN time, an op or dtype nodecast does not
  know, a missing required column) is an InputError naming the file, the
  column and the row (rows count from 1 after the header), and what to do.

The shared corpora become op tables with ``from_neusight`` and
``from_aiconfigurator`` (DataFrames in this schema, latencies converted
from milliseconds), written with ``write_op_table``; docs/inputs.md, "Op
tables", shows how.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.fileio import atomic_path
from nodecast.inputs import read_input
from nodecast.traces import _common
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.op_classes import DType, OpClass, dtype_of, op_class_of
from nodecast.traces.trace import NOT_RECORDED, Trace, TraceMeta
from nodecast.values import as_float, as_int, where

FORMAT = "op-table"

#: Columns every op table has.
REQUIRED = ("device", "op", "duration_s")
#: Integer columns: name -> (least value, largest value). Shapes stop at 2^53, the largest whole number every
#: reader (a float64 column) holds exactly.
INT_COLUMNS: dict[str, tuple[int, int]] = {
    "batch": (1, 1 << 53), "m": (0, 1 << 53), "n": (0, 1 << 53), "k": (0, 1 << 53),
    **{f"{part}_{axis}": (0, (1 << 31) - 1) for part in ("grid", "block") for axis in "xyz"},
    "registers": (0, (1 << 15) - 1), "shared_bytes": (0, (1 << 31) - 1), "gpus": (1, (1 << 15) - 1),
    "message_bytes": (0, _common.MAX_OP_BYTES),
}
#: Optional number columns that may hold fractions (NaN or empty: compute from the shape).
FLOAT_COLUMNS = ("flops", "bytes")
#: Every column of an op table, in the order ``write_op_table`` writes them.
SCHEMA = ("device", "op", "dtype", "batch", "m", "n", "k", "flops", "bytes", "name",
          "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers", "shared_bytes",
          "gpus", "message_bytes", "duration_s")
#: Longest time one row may take, seconds (11.6 days): anything longer is no op's time, and the sum of a table's
#: rows must fit the Trace's integer nanoseconds.
MAX_DURATION_S = 1e6

_SEE = "see docs/inputs.md, Op tables, for the columns and their units"
_HINT = _SEE[0].upper() + _SEE[1:]
#: Ops whose work is computed from m, n, k (``with_work``).
_GEMM_LIKE = (OpClass.GEMM, OpClass.BMM, OpClass.LINEAR, OpClass.CONV, OpClass.ATTENTION)
#: FLOP per element of the ops over (B, H) tensors (exp, max, divide... each counted as one).
_FLOPS_PER_ELEMENT = {OpClass.ELEMENTWISE: 1.0, OpClass.SOFTMAX: 5.0, OpClass.LAYERNORM: 8.0, OpClass.REDUCTION: 1.0}


# -- detection -------------------------------------------------------------------------------------------------

def is_op_table_header(columns: list[str] | tuple[str, ...]) -> bool:
    """Whether column names (any case) look like an op table's: ``op`` and ``device`` or ``duration_s``.

    One required column may be missing, so that the reader, not "not a trace
    format", says which.
    """
    names = {str(c).strip().lower() for c in columns}
    return "op" in names and bool(names & {"device", "duration_s"})


def looks_like_op_table_csv(text: str) -> bool:
    """Whether the start of a text file is an op table's CSV header (its first non-blank line)."""
    import csv  # noqa: PLC0415 (only detection needs it)

    for line in text.lstrip("\ufeff").splitlines():
        if line.strip():
            try:
                header = next(csv.reader([line]))
            except csv.Error:
                return False
            return is_op_table_header(header)
    return False


# -- reading ---------------------------------------------------------------------------------------------------

def read_op_table(path: str | Path, device: str | None = None) -> Trace:
    """Read an op table (CSV or Parquet) into a Trace (see the module docstring).

    ``device``: keep only the rows of this GPU name (a table of several GPUs
    is otherwise refused). Raises InputError on anything the table gets wrong.
    """
    path = Path(path)
    return to_trace(read_frame(path), str(path), device)


def read_frame(path: str | Path) -> pd.DataFrame:
    """An op table as a checked DataFrame: the ``SCHEMA`` columns it has, ``op`` and ``dtype`` in their canonical
    spelling (``dtype`` empty where not recorded), numbers as float64 (NaN: not recorded), ``name`` empty where
    not given; every GPU's rows. Other columns are kept in ``attrs["ignored"]``. InputError as ``read_op_table``.
    """
    path = Path(path)
    raw = _read_raw(path)
    return check_frame(raw, path)


def _read_raw(path: Path) -> pd.DataFrame:
    """The table's cells: text for CSV (nothing converted), Arrow's types for Parquet."""
    try:
        with path.open("rb") as f:
            parquet = f.read(4) == b"PAR1"
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    if parquet:
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415

        try:
            return pq.read_table(path).to_pandas()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"cannot read the Parquet file ({exc})", path=path,
                             hint="The file may be truncated") from None
    import io  # noqa: PLC0415

    try:
        data = read_input(path, what="op table")
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    try:
        return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, na_filter=False,
                           skipinitialspace=True, encoding="utf-8-sig", encoding_errors="replace")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"not a readable CSV op table ({reason})", path=path, hint=_HINT) from None


def check_frame(raw: pd.DataFrame, path: str | Path | None = None) -> pd.DataFrame:
    """``raw`` (an op table's cells, text or numbers) checked and normalised as ``read_frame`` returns it;
    ``path`` names the file in messages. Used on frames built in Python too (``from_neusight``)."""
    names = [str(c).strip().lower() for c in raw.columns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"the op table has the column {dupes[0]!r} twice", path=path, hint=_HINT)
    raw = raw.set_axis(names, axis=1)
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        raise InputError(f"not an op table: no {' or '.join(repr(c) for c in missing)} column (its columns: "
                         f"{shown or 'none'})", path=path,
                         hint="An op table needs device, op and duration_s (seconds); " + _SEE)
    n = len(raw)
    if n == 0:
        raise InputError("the op table has no rows", path=path, hint="Give one row per measured op")
    out: dict[str, Any] = {}
    out["device"] = _text(raw["device"], n)
    empty = np.flatnonzero(out["device"] == "")
    if len(empty):
        raise InputError("is empty", path=path, key=where("device", int(empty[0]) + 1),
                         hint="Give the GPU's name as the driver reports it (nvidia-smi --query-gpu=name)")
    out["op"] = _vocabulary(raw["op"], n, op_class_of, OpClass, "op", path, required=True)
    out["dtype"] = _vocabulary(raw["dtype"], n, dtype_of, DType, "dtype", path, required=False) \
        if "dtype" in raw.columns else np.full(n, "", dtype=object)
    for column, (low, high) in INT_COLUMNS.items():
        if column in raw.columns:  # whole numbers, kept as integers (empty: <NA>) so that a written table reads "3"
            out[column] = pd.array(_numbers(raw[column], column, path, low, high, whole=True), dtype="Int64")
    for column in FLOAT_COLUMNS:
        if column in raw.columns:
            out[column] = _numbers(raw[column], column, path, 0.0, math.inf, whole=False)
    out["duration_s"] = _numbers(raw["duration_s"], "duration_s", path, 0.0, MAX_DURATION_S, whole=False,
                                 required=True)
    out["name"] = _text(raw["name"], n) if "name" in raw.columns else np.full(n, "", dtype=object)
    frame = pd.DataFrame({c: out[c] for c in SCHEMA if c in out})
    frame.attrs["ignored"] = [c for c in names if c not in SCHEMA]
    return frame


def _text(series: pd.Series, n: int) -> np.ndarray:
    """Cells as stripped text (object array); missing cells (None, NaN) as ""."""
    values = series.to_numpy(dtype=object, na_value="")
    return np.fromiter(("" if v is None else str(v).strip() for v in values), dtype=object, count=n)


def _vocabulary(series: pd.Series, n: int, lookup, enum, column: str, path,  # noqa: ANN001
                *, required: bool) -> np.ndarray:
    """Cells of ``op`` or ``dtype`` as their canonical key ("" where empty and not ``required``); InputError
    naming the first unknown spelling."""
    text = _text(series, n)
    uniq, inverse = np.unique(text.astype(str), return_inverse=True)
    keys = []
    for spelled in map(str, uniq):
        if not spelled and not required:
            keys.append("")
            continue
        hit = lookup(spelled) if spelled else None
        if hit is None or hit == 0:
            row = int(np.argmax(text == spelled)) + 1
            known = ", ".join(c.key for c in enum if c != 0)
            reason = "is empty" if not spelled else f"unknown {column} {spelled!r}"
            raise InputError(f"{reason} (known: {known})", path=path, key=where(column, row),
                             hint=f"Spell the {column} as one of those; " + _SEE)
        keys.append(enum(hit).key)
    return np.array(keys, dtype=object)[inverse]


def _numbers(series: pd.Series, column: str, path, low: float, high: float, *, whole: bool,  # noqa: ANN001
             required: bool = False) -> np.ndarray:
    """A number column as float64 (NaN: empty, or "nan" in an optional float column), checked against
    ``low``..``high`` (and whole numbers where ``whole``); the first bad cell is refused by ``values.as_int`` or
    ``as_float``, which name the column and row."""
    if pd.api.types.is_bool_dtype(series.dtype):
        values, text, blank = np.full(len(series), np.nan), series.to_numpy(dtype=object), np.zeros(len(series), bool)
        bad = np.ones(len(series), bool)
    else:
        if pd.api.types.is_numeric_dtype(series.dtype):
            values = series.to_numpy(dtype=np.float64, na_value=np.nan)
            text = series.to_numpy(dtype=object)
            blank = np.isnan(values)
            bad = np.zeros(len(series), bool)
        else:
            text = series.to_numpy(dtype=object, na_value="")
            stripped = pd.Series(["" if v is None else str(v).strip() for v in text], dtype=object)
            blank = (stripped == "").to_numpy()
            if not whole and not required:  # "nan" in an optional float column: not known, as pandas writes it
                blank = blank | (stripped.str.lower() == "nan").to_numpy()
            values = pd.to_numeric(stripped.where(~blank, None), errors="coerce").to_numpy(dtype=np.float64)
            bad = ~blank & np.isnan(values)
        finite = np.isfinite(values)
        bad = bad | (~blank & (~finite | (values < low) | (values > high)))
        if whole:
            bad = bad | (~blank & finite & (np.floor(values) != values))
    if required:
        bad = bad | blank
    if not bad.any():
        return values
    i = int(np.argmax(bad))
    cell = text[i]
    hint = _hint_for(column)
    kwargs = {"path": path, "field": column, "row": i + 1, "hint": hint}
    if blank[i]:
        raise InputError("is empty", path=path, key=where(column, i + 1), hint=hint)
    if whole:
        as_int(cell, ge=int(low), le=int(high), **kwargs)
    else:
        as_float(cell, ge=low, le=None if math.isinf(high) else high, **kwargs)
    raise InputError(f"{cell!r} is not a valid value", path=path, key=where(column, i + 1), hint=hint)


def _hint_for(column: str) -> str:
    if column == "duration_s":
        return "Give each op's measured time in seconds, a number >= 0; " + _SEE
    if column in FLOAT_COLUMNS:
        return f"Give {column} as a number >= 0, or leave it empty to compute it from the shape; " + _SEE
    return f"Give {column} as a whole number, or leave it empty where not recorded; " + _SEE


# -- what an op computes -----------------------------------------------------------------------------------------

def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A number column as float64, NaN where absent."""
    if name in frame.columns:
        return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return np.full(len(frame), np.nan)


def _codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(OpClass codes, DType codes) of a checked frame's canonical ``op`` and ``dtype`` keys (0: not recorded)."""
    ops = {c.key: int(c) for c in OpClass}
    dtypes = {d.key: int(d) for d in DType} | {"": 0}
    op = np.fromiter((ops.get(str(v), 0) for v in frame["op"]), dtype=np.int8, count=len(frame))
    dt = frame["dtype"] if "dtype" in frame.columns else pd.Series([""] * len(frame))
    dtype = np.fromiter((dtypes.get("" if pd.isna(v) else str(v), 0) for v in dt), dtype=np.int8, count=len(frame))
    return op, dtype


def _batch(frame: pd.DataFrame) -> np.ndarray:
    """Batch per row: as given, else 1 where the row has a shape (m, n or k), else NaN."""
    batch = _column(frame, "batch")
    shaped = ~np.isnan(_column(frame, "m")) | ~np.isnan(_column(frame, "n")) | ~np.isnan(_column(frame, "k"))
    return np.where(np.isnan(batch) & shaped, 1.0, batch)


def work(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(flops, bytes) per row of a checked op-table frame (``read_frame``), float64, NaN where unknown: the
    table's own values where given, else computed from the shape (the module docstring's table; ``bytes``
    of a copy is its size, not its DRAM traffic: the traffic is returned)."""
    op, dtype = _codes(frame)
    e = np.array([DType(d).bytes_per_element for d in range(len(DType))])[dtype]
    b, m, n, k = _batch(frame), _column(frame, "m"), _column(frame, "n"), _column(frame, "k")
    flops = np.full(len(frame), np.nan)
    traffic = np.full(len(frame), np.nan)
    gemm = np.isin(op, [OpClass.GEMM, OpClass.BMM])
    flops[gemm] = 2 * (b * m * n * k)[gemm]
    traffic[gemm] = (e * b * (m * k + k * n + m * n))[gemm]
    linear = op == OpClass.LINEAR
    flops[linear] = 2 * (b * m * n * k)[linear]
    traffic[linear] = (e * (b * m * k + k * n + b * m * n))[linear]
    conv = op == OpClass.CONV
    flops[conv] = 2 * (b * m * n * k)[conv]
    attention = op == OpClass.ATTENTION
    flops[attention] = 4 * (b * m * n * k)[attention]
    traffic[attention] = (e * b * (2 * m * k + 2 * n * k))[attention]
    elements = b * m * np.where(np.isnan(n), 1.0, n)
    for cls, per in _FLOPS_PER_ELEMENT.items():
        rows = op == cls
        flops[rows] = per * elements[rows]
        traffic[rows] = (e * (elements + b * m) if cls == OpClass.REDUCTION else 2 * e * elements)[rows]
    copy = op == OpClass.COPY
    flops[copy] = 0.0
    size = _column(frame, "bytes")
    traffic[copy] = 2 * size[copy]
    given_flops = _column(frame, "flops")
    flops = np.where(np.isnan(given_flops), flops, given_flops)
    traffic = np.where(np.isnan(size) | copy, traffic, size)
    return flops, traffic


def with_work(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a checked op-table frame with ``flops`` and ``bytes`` filled from the shapes where empty
    (``work``; a copy's ``bytes`` stays its size)."""
    flops, traffic = work(frame)
    out = frame.copy()
    out["flops"] = flops
    copy = (out["op"] == OpClass.COPY.key).to_numpy()
    out["bytes"] = np.where(copy, _column(frame, "bytes"), traffic)
    return out[[c for c in SCHEMA if c in out.columns]]


def default_names(frame: pd.DataFrame) -> list[str]:
    """Kernel names built from op, dtype and shape (``gemm_bf16_m4096_n4096_k4096``, ``bmm_fp32_b6_m27_n21_k390``,
    ``all_reduce_fp16_g8_1048576B``): what rows without a ``name`` are called, so that two tables of one sweep
    pair by name."""
    cols = {c: _column(frame, c) for c in ("m", "n", "k", "gpus", "message_bytes")}
    batch = _column(frame, "batch")
    dtype = frame["dtype"] if "dtype" in frame.columns else pd.Series([""] * len(frame))
    out = []
    for i, (op, dt) in enumerate(zip(frame["op"], dtype, strict=True)):
        parts = [str(op)]
        if isinstance(dt, str) and dt:
            parts.append(dt)
        if batch[i] > 1:
            parts.append(f"b{int(batch[i])}")
        parts += [f"{axis}{int(cols[axis][i])}" for axis in ("m", "n", "k") if not np.isnan(cols[axis][i])]
        if not np.isnan(cols["gpus"][i]):
            parts.append(f"g{int(cols['gpus'][i])}")
        if not np.isnan(cols["message_bytes"][i]):
            parts.append(f"{int(cols['message_bytes'][i])}B")
        out.append("_".join(parts))
    return out


# -- the Trace ---------------------------------------------------------------------------------------------------

def to_trace(frame: pd.DataFrame, source: str = "", device: str | None = None) -> Trace:
    """A Trace of a checked op-table frame (``read_frame``; see the module docstring). ``device``: keep only
    that GPU's rows; without it a frame of several GPUs is an InputError. ``source`` names the file."""
    path = source or None
    devices = pd.Series(frame["device"]).value_counts(sort=False)
    if device is not None:
        if device not in devices.index:
            raise InputError(f"no row of GPU {device!r} (the table has {_listed(devices)})", path=path,
                             key="device", hint="Name one of the table's GPUs")
        frame = frame[(frame["device"] == device).to_numpy()].reset_index(drop=True)
    elif len(devices) > 1:
        raise InputError(f"the op table holds the measurements of {len(devices)} GPUs ({_listed(devices)}); a trace "
                         "is one run on one GPU model", path=path, key="device",
                         hint="Write one op table per GPU (nodecast.traces.op_table.write_op_tables), or read one "
                              "GPU's rows with read_op_table(path, device=NAME); " + _SEE)
    n = len(frame)
    op, dtype = _codes(frame)
    flops, traffic = work(frame)
    total = float(frame["duration_s"].sum())
    if total * 1e9 >= 2.0**62:
        raise InputError(f"the op table's durations add up to {total:.6g} s, more than nodecast's timeline holds "
                         f"({2.0**62 * 1e-9:.3g} s)", path=path, key="duration_s",
                         hint="Check that duration_s is in seconds; " + _SEE)
    duration = np.rint(frame["duration_s"].to_numpy(dtype=np.float64) * 1e9).astype(np.int64)
    end = np.cumsum(duration)
    copy = op == OpClass.COPY
    size = _column(frame, "bytes")
    if copy.any() and np.isnan(size[copy]).any():
        row = int(np.flatnonzero(copy)[np.argmax(np.isnan(size[copy]))]) + 1
        raise InputError("a copy row has no bytes", path=path, key=where("bytes", row),
                         hint="Give the bytes each copy moves")
    message = _column(frame, "message_bytes")
    collective = op >= OpClass.ALL_REDUCE
    nbytes = np.where(copy, size, np.where(collective & ~np.isnan(message), message, 0.0))
    names = np.array(frame["name"].to_numpy(dtype=object) if "name" in frame.columns else [""] * n, dtype=object)
    unnamed = names == ""
    if unnamed.any():
        names[unnamed] = np.array(default_names(frame[unnamed]), dtype=object)
    names[copy] = None  # a memcpy has no kernel name in any trace
    name_id, interned = _common.intern_strings(names.tolist())
    cols: dict[str, np.ndarray] = {
        "kind": np.where(copy, OpKind.MEMCPY, OpKind.KERNEL).astype(np.int8),
        "copy_kind": np.where(copy, CopyKind.DTOD, CopyKind.NONE).astype(np.int8),
        "src_mem": np.where(copy, MemKind.DEVICE, MemKind.UNKNOWN).astype(np.int8),
        "dst_mem": np.where(copy, MemKind.DEVICE, MemKind.UNKNOWN).astype(np.int8),
        "bytes": nbytes.astype(np.int64),
        "start_ns": end - duration,
        "end_ns": end,
        "device": np.zeros(n, np.int16),
        "stream": np.zeros(n, np.int64),
        "name_id": name_id,
        "op_class": op,
        "dtype": dtype,
        "flops": flops,
        "work_bytes": traffic,
        "batch": _ints(_batch(frame)),
        "m": _ints(_column(frame, "m")),
        "n": _ints(_column(frame, "n")),
        "k": _ints(_column(frame, "k")),
        "gpus": _ints(_column(frame, "gpus")),
    }
    for column in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"):
        if column in frame.columns:
            cols[column] = np.nan_to_num(_column(frame, column), nan=0.0).astype(np.int64)
    for ours, theirs in (("registers", "registers_per_thread"), ("shared_bytes", "static_smem_bytes")):
        if ours in frame.columns:
            cols[theirs] = _ints(_column(frame, ours))
    notes = [f"an op table: its {n:,} ops are laid back to back on one stream in row order, so its timeline is "
             f"the sum of their measured times ({total:.6g} s), with no overlap and no host time"]
    ignored = frame.attrs.get("ignored") or []
    if ignored:
        notes.append(f"op-table columns not read: {', '.join(ignored[:10])}"
                     + (f" and {len(ignored) - 10} more" if len(ignored) > 10 else ""))
    meta = TraceMeta(source=source, format=FORMAT, profiler="op table", gpus={0: str(frame["device"].iloc[0])},
                     notes=notes)
    _common.check_ops(cols, source)
    return Trace.from_columns(cols, interned, meta, sort=False)


def _ints(values: np.ndarray) -> np.ndarray:
    """Float values (NaN: not recorded) as int64 with NOT_RECORDED for NaN."""
    return np.where(np.isnan(values), NOT_RECORDED, values).astype(np.int64)


def _listed(counts: pd.Series) -> str:
    """``"Tesla T4: 200 rows, Tesla V100-PCIE-32GB: 200 rows"`` (at most 5 GPUs named)."""
    parts = [f"{name}: {count:,} rows" for name, count in counts.items()]
    return ", ".join(parts[:5]) + (f" and {len(parts) - 5} more" if len(parts) > 5 else "")


# -- writing -----------------------------------------------------------------------------------------------------

def write_op_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write an op-table frame (``from_neusight``, ``from_aiconfigurator``, your own) as CSV or Parquet (by the
    extension), atomically, with its ``SCHEMA`` columns in order; checked first (``check_frame``), so that what
    is written reads back."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputError(f"unsupported op-table extension {path.suffix or '(none)'!r}", path=path,
                         hint="Name the op table .csv or .parquet")
    checked = check_frame(frame, path)
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            checked.to_csv(tmp, index=False)
        else:
            checked.to_parquet(tmp, index=False)
    return path


def write_op_tables(frame: pd.DataFrame, folder: str | Path, suffix: str = ".csv") -> dict[str, Path]:
    """One op table per GPU of ``frame`` in ``folder`` (made if missing; ``<device as a file name><suffix>``):
    GPU name -> path."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make the folder ({exc.strerror})", path=folder,
                         hint="Choose a folder you can write") from None
    out = {}
    for device, rows in frame.groupby("device", sort=True):
        stem = "".join(c if c.isalnum() or c in "-." else "_" for c in str(device)).strip("_") or "gpu"
        out[str(device)] = write_op_table(rows.reset_index(drop=True), folder / f"{stem}{suffix}")
    return out


# -- the shared corpora ------------------------------------------------------------------------------------------

#: NeuSight's elementwise ops that read two tensors (the others read one and a scalar).
_NEUSIGHT_BINARY = frozenset({"add", "mul", "div", "pow"})
_NEUSIGHT_OPS = {"bmm": "bmm", "linear": "linear", "conv": "conv", "softmax": "softmax", "ln": "layernorm"}
_NEUSIGHT_LAUNCH = {"Grid x": "grid_x", "Grid y": "grid_y", "Grid z": "grid_z", "Block x": "block_x",
                    "Block y": "block_y", "Block z": "block_z"}


def from_neusight(path: str | Path) -> pd.DataFrame:
    """One of NeuSight's training files (``../shared/data/cross-gpu/neusight-train/<op>.parquet``) as an op-table
    frame of every GPU in it (FP32; ``Latency`` milliseconds -> ``duration_s``; ``Kernel Name`` -> name,
    ``Grid x``... -> grid_x...).

    Shapes: bmm and linear ``B, M, N, K`` -> batch, m, n, k (linear: B problems share the weight); softmax, ln
    (layernorm) and the elementwise ops ``B, H`` -> m = B, n = H; conv (``B, Input_Channel, Output_Channel,
    Kernel_Szie, Input_Size, Stride, Padding``, square images and filters) -> its implicit GEMM m = B·P·P
    (P = (Input_Size + 2·Padding - Kernel_Szie) // Stride + 1), n = Output_Channel, k = Input_Channel·Kernel_Szie²,
    with bytes = 4·(input + filters + output elements). Binary elementwise ops (add, mul, div, pow) get bytes
    = 3 tensors (the schema's default counts 2).
    """
    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read NeuSight's Parquet file ({exc})", path=path) from None
    need = {"OPName", "Latency", "Device"}
    if not need <= set(df.columns):
        raise InputError(f"not a NeuSight training file (no {', '.join(sorted(need - set(df.columns)))} column)",
                         path=path, hint="Give a file of ../shared/data/cross-gpu/neusight-train/")
    ops = df["OPName"].astype(str).str.strip().str.lower()
    out = pd.DataFrame({"device": df["Device"].astype(str),
                        "op": ops.map(lambda o: _NEUSIGHT_OPS.get(o, "elementwise")), "dtype": "fp32"})
    nan = pd.Series(np.nan, index=df.index)
    for axis in ("batch", "m", "n", "k", "flops", "bytes"):
        out[axis] = nan
    if {"B", "M", "N", "K"} <= set(df.columns):  # bmm, linear
        out["batch"], out["m"], out["n"], out["k"] = df["B"], df["M"], df["N"], df["K"]
    elif {"B", "H"} <= set(df.columns):  # softmax, ln, elementwise: m = B rows of H elements
        out["batch"], out["m"], out["n"] = 1, df["B"], df["H"]
        binary = ops.isin(_NEUSIGHT_BINARY).to_numpy()
        out.loc[binary, "bytes"] = (3 * 4 * df["B"] * df["H"])[binary]
    elif {"B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"} <= set(df.columns):
        b, cin, cout = df["B"], df["Input_Channel"], df["Output_Channel"]
        r, h, s, pad = df["Kernel_Szie"], df["Input_Size"], df["Stride"], df["Padding"]
        p = (h + 2 * pad - r) // s + 1
        out["batch"], out["m"], out["n"], out["k"] = 1, b * p * p, cout, cin * r * r
        out["bytes"] = 4.0 * (b * cin * h * h + cout * cin * r * r + b * cout * p * p)
    else:
        raise InputError("a NeuSight file with no shape columns this reader knows (B, M, N, K; B, H; conv's)",
                         path=path, hint="Give a file of ../shared/data/cross-gpu/neusight-train/")
    out["name"] = df["Kernel Name"].astype(str) if "Kernel Name" in df.columns else ""
    for theirs, ours in _NEUSIGHT_LAUNCH.items():
        if theirs in df.columns:
            out[ours] = df[theirs]
    out["duration_s"] = df["Latency"].astype(np.float64) * 1e-3  # NeuSight's latencies are milliseconds
    return check_frame(out, path)


def from_aiconfigurator(path: str | Path) -> pd.DataFrame:
    """AIConfigurator's GEMM (``../shared/data/cross-gpu/aiconfigurator/gemm.parquet``) or NCCL (``nccl.parquet``)
    latencies as an op-table frame of every GPU in it (``latency`` milliseconds -> ``duration_s``), rows sorted
    by GPU, dtype and shape (so that two GPUs' tables of one sweep are in one order).

    GEMM: ``gemm_dtype`` bfloat16 -> bf16, fp8, fp8_block, nvfp4, the weight-only ``int8_wo``/``int4_wo`` -> int8
    and int4, SmoothQuant ``sq`` -> int8; m, n, k as given (C[m,n] = A[m,k] B[k,n]), batch 1. NCCL: ``op_name``
    (all_gather, all_reduce, alltoall -> all_to_all, reduce_scatter), ``nccl_dtype`` half -> fp16, int8;
    ``num_gpus`` -> gpus; ``message_size`` (elements) x the element size -> message_bytes.
    """
    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read AIConfigurator's Parquet file ({exc})", path=path) from None
    if {"gemm_dtype", "m", "n", "k", "latency", "device"} <= set(df.columns):
        out = pd.DataFrame({"device": df["device"].astype(str), "op": "gemm", "dtype": df["gemm_dtype"].astype(str),
                            "batch": 1, "m": df["m"], "n": df["n"], "k": df["k"]})
    elif {"nccl_dtype", "num_gpus", "message_size", "latency", "device", "op_name"} <= set(df.columns):
        size = np.array([DType(dtype_of(d) or 0).bytes_per_element for d in df["nccl_dtype"].astype(str)])
        out = pd.DataFrame({"device": df["device"].astype(str), "op": df["op_name"].astype(str),
                            "dtype": df["nccl_dtype"].astype(str), "gpus": df["num_gpus"],
                            "message_bytes": np.rint(df["message_size"].to_numpy(np.float64) * size)})
    else:
        raise InputError("not an AIConfigurator gemm.parquet or nccl.parquet (their columns are missing)",
                         path=path, hint="Give ../shared/data/cross-gpu/aiconfigurator/gemm.parquet or nccl.parquet")
    out["duration_s"] = df["latency"].astype(np.float64) * 1e-3  # AIConfigurator's latencies are milliseconds
    checked = check_frame(out, path)
    keys = [c for c in ("device", "op", "dtype", "m", "n", "k", "gpus", "message_bytes") if c in checked.columns]
    return checked.sort_values(keys, kind="stable").reset_index(drop=True)
