"""An op table's cells, read and checked: the DataFrame every op-table function works on (``read_frame``,
``check_frame``). The columns, their units and the checks are ``op_table``'s module docstring's."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.inputs import read_input
from nodecast.traces import _common
from nodecast.traces.op_classes import DType, OpClass, dtype_of, op_class_of
from nodecast.values import as_float, as_int, where


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

SEE = "see docs/inputs.md, Op tables, for the columns and their units"
HINT = SEE[0].upper() + SEE[1:]


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
        raise InputError(f"not a readable CSV op table ({reason})", path=path, hint=HINT) from None


def check_frame(raw: pd.DataFrame, path: str | Path | None = None) -> pd.DataFrame:
    """``raw`` (an op table's cells, text or numbers) checked and normalised as ``read_frame`` returns it;
    ``path`` names the file in messages. Used on frames built in Python too (``from_neusight``)."""
    names = [str(c).strip().lower() for c in raw.columns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"the op table has the column {dupes[0]!r} twice", path=path, hint=HINT)
    raw = raw.set_axis(names, axis=1)
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        raise InputError(f"not an op table: no {' or '.join(repr(c) for c in missing)} column (its columns: "
                         f"{shown or 'none'})", path=path,
                         hint="An op table needs device, op and duration_s (seconds); " + SEE)
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
    if "message_bytes" in out:
        _check_elements(out["message_bytes"], out["dtype"], path)
    frame = pd.DataFrame({c: out[c] for c in SCHEMA if c in out})
    frame.attrs["ignored"] = [c for c in names if c not in SCHEMA]
    return frame


def _check_elements(message: pd.api.extensions.ExtensionArray, dtype: np.ndarray, path) -> None:  # noqa: ANN001
    """InputError naming the first row whose ``message_bytes`` is no whole number of its ``dtype``'s elements: a
    collective moves whole elements, so such a size is in other units (elements, bits) or for another dtype."""
    size = np.array([DType[d.upper()].bytes_per_element if d else np.nan for d in dtype.tolist()])
    values = message.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isnan(values) & (size >= 1) & (np.fmod(values, np.where(size >= 1, size, 1.0)) != 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{int(values[i])} B is not a whole number of {dtype[i]} elements ({size[i]:g} B each)",
                         path=path, key=where("message_bytes", i + 1),
                         hint="Give a collective's message size in bytes: its elements x the dtype's size "
                              "(nccl-tests' size); " + SEE)


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
                             hint=f"Spell the {column} as one of those; " + SEE)
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
        return "Give each op's measured time in seconds, a number >= 0; " + SEE
    if column in FLOAT_COLUMNS:
        return f"Give {column} as a number >= 0, or leave it empty to compute it from the shape; " + SEE
    return f"Give {column} as a whole number, or leave it empty where not recorded; " + SEE
