"""JSON text that every JSON parser reads: NaN and infinities written as ``null``.

Python's ``json`` writes a float NaN as the bare word ``NaN`` and infinities
as ``Infinity``/``-Infinity``. RFC 8259 has no such numbers: ``JSON.parse``
in browsers and Node, ``jq``, Go and serde reject the whole file. nodecast
has NaN in many results (a model's time for ops it does not project, an
error with nothing to score, the bound of a total row), so every JSON file
and document it writes goes through ``dumps``, one rule:

- a non-finite number (NaN, +inf, -inf; Python or numpy floats, inside numpy
  arrays too) is written ``null``, as are pandas ``NA``/``NaT`` and numpy
  ``NaT``; what null means per field is in the docs of each file
  (docs/report.md, "Missing numbers in the JSON");
- numpy scalars and arrays are written as plain numbers and lists;
- ``json.dumps`` runs with ``allow_nan=False``, so a non-finite number the
  rule does not reach (a dict key) raises ``ValueError`` at the write, in the
  tests, instead of writing a file other tools cannot read.

Standard library only: the CUPTI injector (``record/_inject``) runs it inside
the traced program, and pandas is looked up only if the program imported it.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any


def _missing(value: Any) -> bool:
    """pandas' NA or NaT (pandas is never imported here: a value can only be one if pandas is loaded)."""
    pd = sys.modules.get("pandas")
    return pd is not None and (value is pd.NA or value is pd.NaT)


def finite(value: Any) -> Any:
    """``value`` with every non-finite number and missing value as None, through dicts, lists and tuples (as lists).

    numpy scalars and arrays become Python numbers and (nested) lists first
    (``tolist``); other values are returned as they are (a float subclass such
    as ``numpy.float64`` stays itself: ``json`` writes it as a float).
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str | bytes) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if _missing(value):
        return None
    if hasattr(value, "tolist"):  # numpy scalar or array (a NaT becomes None)
        return finite(value.tolist())
    return value


def _plain(value: Any) -> Any:
    """What ``json`` cannot write itself: numpy scalars and arrays as Python values, pandas NA/NaT as None."""
    if _missing(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    msg = f"Object of type {type(value).__name__} is not JSON serializable"
    raise TypeError(msg)


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None, **options: Any) -> str:
    """``json.dumps(finite(value), allow_nan=False, **options)``: strict JSON, non-finite numbers as null.

    ``options`` are ``json.dumps``'s (``indent``, ``sort_keys``,
    ``separators`` ...), ``default`` converts what neither ``json`` nor this
    module writes. A document without a non-finite number is written in one
    pass, with no copy (Chrome traces hold millions of events); the first
    non-finite number makes it start again from ``finite(value)``. The text
    is the same either way.
    """
    def plain(v: Any) -> Any:
        try:
            return _plain(v)
        except TypeError:
            if default is None:
                raise
            return default(v)

    try:
        return json.dumps(value, allow_nan=False, default=plain, **options)
    except ValueError:  # a non-finite number somewhere (the message says "Out of range float values")
        return json.dumps(finite(value), allow_nan=False, default=plain, **options)


__all__ = ["dumps", "finite"]
