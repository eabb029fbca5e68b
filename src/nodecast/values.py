"""Checked conversion of the numbers read from input files: one path for every reader.

Readers take numbers from SQLite cells, CSV and text fields, StarPU's
calibration files and JSON documents. A bare ``int()`` or ``float()`` on such
a value turns a damaged or hand-edited file into a traceback (``int(None)``,
``int('abc')`` and ``int(float('inf'))`` raise TypeError, ValueError and
OverflowError) or lets an impossible number (NaN, 1e308, a negative count)
flow into the models. ``as_int`` and ``as_float`` accept exactly the values
that stand for a number, check the range the caller states, and otherwise
raise one InputError naming the file, the field and the row::

    trace.sqlite: ENUM_CUDA_MEMCPY_OPER.id, row 3: 'abc' is not an integer. The file is damaged ...

What counts as a number:

- ``int`` (and numpy integers); ``bool`` never does (JSON ``true`` is not 1);
- ``float`` (and numpy floats): for ``as_int`` only when finite and whole
  (SQLite may hand back ``3.0``); for ``as_float`` NaN and infinities only
  when the caller allows them (StarPU writes ``nan`` for "not measured");
- ``str``, when ``text`` is true (the default, for text formats): surrounding
  blanks are ignored, ``as_int`` reads an integer in ``base`` (and, in base
  10, a whole number written as a float, ``1e3``); ``as_float`` reads what
  ``float()`` reads (``1e400`` reads as infinity and is refused as such).
  JSON readers pass ``text=False``: there a quoted number is a type error;
- nothing else: ``None`` (SQL NULL, JSON null), bytes (a SQLite blob), lists
  and objects are refused, each with its own reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from os import PathLike
from typing import Any

import numpy as np

from nodecast.errors import InputError

#: The hint of every refusal unless the caller gives its own.
DAMAGED = "The file is damaged or was edited; export, record or calibrate it again"

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_Path = str | PathLike[str] | None


def where(field: str, row: int | str | None = None) -> str:
    """The key of a message: ``"TABLE.column, row 3"``, ``"Start, line 12"``, or just the field.

    An int ``row`` is a 1-based row number; a string is used as written (``"line 12"``).
    """
    if row is None:
        return field
    return f"{field}, row {row}" if isinstance(row, int) else f"{field}, {row}"


def _shown(value: Any) -> str:
    """A value as the message quotes it: short, on one line, text without its surrounding blanks."""
    text = repr(value.strip() if isinstance(value, str) else value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str | None:
    """Why ``value`` is no number at all (None when it may be one)."""
    if value is None:
        return "is empty (null)"
    if isinstance(value, bool | np.bool_):
        return f"is a boolean ({str(value).lower()}), not a number"
    if isinstance(value, bytes | bytearray | memoryview):
        return "holds binary data (a blob), not a number"
    if isinstance(value, list | tuple):
        return "is a list, not a number"
    if isinstance(value, dict):
        return "is an object, not a number"
    return None


def json_kind(value: Any) -> str:
    """What a JSON value is, for messages: ``null``, ``true``, ``a number (3)``, ``a string``, ``an object``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"a number ({_shown(value)})"
    if isinstance(value, str):
        return f"a string ({_shown(value)})"
    return "a list" if isinstance(value, list) else "an object"


def _refuse(reason: str, path: _Path, field: str, row: int | str | None, hint: str | None) -> InputError:
    return InputError(reason, path=path, key=where(field, row), hint=hint)


def _bounds(ge: float | None, gt: float | None, le: float | None) -> str:
    parts = []
    if gt is not None:
        parts.append(f"> {gt:,}" if isinstance(gt, int) else f"> {gt:g}")
    elif ge is not None:
        parts.append(f">= {ge:,}" if isinstance(ge, int) else f">= {ge:g}")
    if le is not None:
        parts.append(f"<= {le:,}" if isinstance(le, int) else f"<= {le:g}")
    return " and ".join(parts)


def as_int(
    value: Any,
    *,
    path: _Path,
    field: str,
    row: int | str | None = None,
    ge: int = INT64_MIN,
    le: int = INT64_MAX,
    base: int = 10,
    text: bool = True,
    hint: str | None = DAMAGED,
) -> int:
    """``value`` as an int in ``ge``..``le`` (default: int64), or InputError naming ``path``, ``field`` and ``row``."""
    if type(value) is int and ge <= value <= le:  # NOTE: the common case, kept cheap for per-row use
        return value
    reason = _kind(value)
    if reason is not None:
        raise _refuse(reason, path, field, row, hint)
    number: int | float
    if isinstance(value, int | np.integer):
        number = int(value)
    elif isinstance(value, float | np.floating):
        number = float(value)
    elif isinstance(value, str) and text:
        s = value.strip()
        if not s:
            raise _refuse("is empty", path, field, row, hint)
        try:
            number = int(s, base)
        except ValueError:
            if base != 10:
                raise _refuse(f"{_shown(value)} is not a base-{base} integer", path, field, row, hint) from None
            try:
                number = float(s)
            except ValueError:
                raise _refuse(f"{_shown(value)} is not an integer", path, field, row, hint) from None
    else:
        raise _refuse(f"{_shown(value)} is not an integer", path, field, row, hint)
    if isinstance(number, float):
        if math.isnan(number):
            raise _refuse(f"{_shown(value)} is not a number (NaN)", path, field, row, hint)
        if math.isinf(number):
            raise _refuse(f"{_shown(value)} is infinite", path, field, row, hint)
        if not number.is_integer():
            raise _refuse(f"{_shown(value)} is not a whole number", path, field, row, hint)
        number = int(number)
    if not ge <= number <= le:
        shown_ge = None if ge == INT64_MIN else ge
        shown_le = None if le == INT64_MAX else le
        rule = _bounds(shown_ge, None, shown_le) or "a 64-bit integer"
        raise _refuse(f"{_shown(value)} is out of range (must be {rule})", path, field, row, hint)
    return number


def as_float(
    value: Any,
    *,
    path: _Path,
    field: str,
    row: int | str | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    nan_ok: bool = False,
    inf_ok: bool = False,
    text: bool = True,
    hint: str | None = DAMAGED,
) -> float:
    """``value`` as a float within the bounds given, or InputError naming ``path``, ``field`` and ``row``.

    NaN passes (unchecked against the bounds) only with ``nan_ok``, infinities
    (still checked against the bounds) only with ``inf_ok``.
    """
    reason = _kind(value)
    if reason is not None:
        raise _refuse(reason, path, field, row, hint)
    if isinstance(value, int | float | np.integer | np.floating):
        try:
            number = float(value)
        except OverflowError:  # an int beyond a double's range
            raise _refuse(f"{_shown(value)} is out of range", path, field, row, hint) from None
    elif isinstance(value, str) and text:
        s = value.strip()
        if not s:
            raise _refuse("is empty", path, field, row, hint)
        try:
            number = float(s)
        except ValueError:
            raise _refuse(f"{_shown(value)} is not a number", path, field, row, hint) from None
    else:
        raise _refuse(f"{_shown(value)} is not a number", path, field, row, hint)
    if math.isnan(number):
        if nan_ok:
            return number
        raise _refuse(f"{_shown(value)} is not a number (NaN)", path, field, row, hint)
    if math.isinf(number) and not inf_ok:
        raise _refuse(f"{_shown(value)} is infinite or beyond a double's range", path, field, row, hint)
    if (ge is not None and number < ge) or (gt is not None and number <= gt) or (le is not None and number > le):
        raise _refuse(f"{_shown(value)} is out of range (must be {_bounds(ge, gt, le)})", path, field, row, hint)
    return number


def as_ints(
    values: Sequence[Any],
    *,
    path: _Path,
    field: str,
    ge: int = INT64_MIN,
    le: int = INT64_MAX,
    hint: str | None = DAMAGED,
) -> np.ndarray:
    """A column of values (row ``i`` is row ``i + 1`` in messages) as an int64 array, checked like ``as_int``.

    One pass of C-level checks when every value is a Python int in range; a
    value that is not is converted (or refused) by ``as_int``.
    """
    if all(type(v) is int for v in values) and (not values or (ge <= min(values) and max(values) <= le)):
        return np.array(values, dtype=np.int64)
    return np.array(
        [as_int(v, path=path, field=field, row=i, ge=ge, le=le, hint=hint) for i, v in enumerate(values, 1)],
        dtype=np.int64,
    )
