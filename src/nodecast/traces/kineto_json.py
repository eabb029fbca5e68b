"""A Kineto file's JSON: parsed with its numbers kept exact, and its microsecond and integer fields read.

Kineto writes ``ts``/``dur`` in microseconds, as integers or as decimals with
nanosecond digits (``1712195495505583.047``). A float64 cannot hold such a
value to the nanosecond (its spacing near 1.7e15 is 0.25 us), so the JSON is
parsed with numbers kept as text (``load_json``) and converted to integer ns
exactly (``us_text_to_ns``). Integer fields (device, stream, bytes...) are
read by ``int_column``, which refuses a value its column cannot hold.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from nodecast.decoding import decoder_limits
from nodecast.errors import InputError
from nodecast.inputs import inflate_gzip, read_input
from nodecast.traces.reader import GZIP_MAGIC


#: Largest |ts| or |dur| accepted, ns: 2^62 ns (146 years) keeps ts + dur inside an int64.
_LIMIT_NS = 1 << 62

# What ``int_field`` returns, in strict mode, for a value that is no integer.
_NOT_A_NUMBER = "not a number"
_NOT_FINITE = "not finite"


class NumberError(ValueError):
    """Values ``us_text_to_ns`` cannot convert: why, how many, and the first one as written."""

    def __init__(self, reason: str, count: int, first: object) -> None:
        self.reason = reason
        self.count = count
        self.first = first
        more = f" (and {count - 1:,} more)" if count > 1 else ""
        super().__init__(f"{reason}: {first!r}{more}")


def load_json(path: Path) -> Any:
    """Parse a JSON file, gunzipping it first when it starts with the gzip magic bytes.

    Floats stay text (see the module docstring). Truncated or invalid input
    raises InputError naming the file.
    """
    raw: bytes | bytearray = read_input(path, what="trace")  # bounded: see nodecast.inputs
    gzipped = raw[:2] == GZIP_MAGIC
    if gzipped:
        try:
            raw = inflate_gzip(raw, path)  # a piece at a time, refused past the input limit (a gzip bomb)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(
                f"the gzip stream is truncated or corrupt ({exc})",
                path=path,
                hint="Copy the file again; it may have been cut short",
            ) from None
    if not raw or raw.isspace():  # as `not raw.strip()`, without a copy of the whole text
        raise InputError(
            "is empty once decompressed" if gzipped else "holds only white space",
            path=path,
            hint="The profiler may not have finished writing it; save the trace again",
        )
    try:
        # The C scanner recurses once per nesting level; no trace nests more than a few levels.
        with decoder_limits(path, "trace", "The file is damaged or not a Kineto/Chrome trace "
                                           "({\"traceEvents\": [...]}); save it again from the profiler"):
            return json.loads(raw, parse_float=str)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})",
            path=path,
            hint="The trace may be truncated; save it again from the profiler",
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None


def us_text_to_ns(values: Sequence[int | str]) -> np.ndarray:
    """Microsecond values (ints, or decimal text as ``load_json`` keeps floats) -> int64 ns.

    Exact for up to three decimals; a fourth decimal rounds half up. Numbers
    in exponent form fall back to ``Decimal``. Raises ``NumberError`` (a
    ValueError) when a value is not a number, not finite (NaN, Infinity) or
    beyond +-2^62 ns (``_LIMIT_NS``).
    """
    if not values:
        return np.zeros(0, dtype=np.int64)
    try:
        ns = _us_to_ns_fast(values)
    except (ValueError, OverflowError, InvalidOperation):
        ns = None
    if ns is None:
        # Something odd (text, NaN, a huge number): convert one by one, exactly, and report.
        ns = _us_to_ns_exact(values)
    return ns


def _us_to_ns_fast(values: Sequence[int | str]) -> np.ndarray | None:
    """Vectorized conversion; None (or an exception) when a value needs ``_us_to_ns_exact``."""
    limit_us = _LIMIT_NS // 1000
    if all(type(v) is int for v in values):
        us = np.asarray(values, dtype=np.int64)  # OverflowError beyond int64
        if (us > limit_us).any() or (us < -limit_us).any():
            return None
        return us * 1000
    ns = _us_to_ns_digits(values)
    if ns is not None:
        return ns
    text = np.asarray(values, dtype=str)
    odd = np.char.find(np.char.lower(text), "e") >= 0  # exponent form (also "inf", "nan"... fail below)
    neg = np.char.startswith(text, "-")
    digits = np.char.lstrip(text, "-")
    parts = np.char.partition(digits, ".")
    whole, frac = parts[:, 0], parts[:, 2]
    whole = np.where(odd | (whole == ""), "0", whole)
    frac4 = np.char.ljust(np.where(odd, "", frac), 4, "0").astype("U4")
    whole_us = whole.astype(np.int64)
    if (whole_us > limit_us).any():
        return None
    ns = whole_us * 1000 + (frac4.astype(np.int64) + 5) // 10
    ns = np.where(neg, -ns, ns)
    for i in np.flatnonzero(odd):
        one = _exact_ns(text[i])
        if isinstance(one, str):
            return None
        ns[i] = one
    return ns


def _us_to_ns_digits(values: Sequence[int | str]) -> np.ndarray | None:
    """Plain decimal text of at most three decimals (what Kineto writes) -> ns exactly: its digits with the
    point dropped. Five times faster than numpy's string arrays on text timestamps; None when a value is
    anything else (more decimals, an exponent, no text, out of range), for the general path."""
    out: list[int] = []
    append = out.append
    try:
        for v in values:
            if type(v) is int:
                append(v * 1000)
            elif len(v) > 4 and v[-4] == ".":  # type: ignore[arg-type]  # not text: TypeError, general path
                append(int(v.replace(".", "", 1)))  # type: ignore[union-attr]
            else:
                whole, _, frac = v.partition(".")  # type: ignore[union-attr]
                if len(frac) > 3:
                    return None
                append(int(whole + frac.ljust(3, "0")))
        ns = np.fromiter(out, dtype=np.int64, count=len(out))
    except (TypeError, AttributeError, ValueError, OverflowError):
        return None
    if len(ns) and (ns.max() > _LIMIT_NS or ns.min() < -_LIMIT_NS):
        return None
    return ns


def _exact_ns(value: object) -> int | str:
    """One microsecond value -> ns (half up, like the fast path), or why it cannot be converted."""
    try:
        us = Decimal(value) if type(value) is int else Decimal(str(value))
    except InvalidOperation:
        return _NOT_A_NUMBER
    if not us.is_finite():
        return _NOT_FINITE
    if us.adjusted() > 18:  # far beyond the limit: do not build a huge integer
        return "out of range"
    ns = int((us * 1000).to_integral_value(rounding=ROUND_HALF_UP))
    return ns if -_LIMIT_NS <= ns <= _LIMIT_NS else "out of range"


def _us_to_ns_exact(values: Sequence[int | str]) -> np.ndarray:
    """``us_text_to_ns`` one value at a time; NumberError naming what is wrong and how often."""
    converted = [_exact_ns(v) for v in values]
    bad = [i for i, x in enumerate(converted) if isinstance(x, str)]
    if bad:
        reasons = list(dict.fromkeys(converted[i] for i in bad))
        reason = " or ".join(str(r) for r in reasons)
        if "out of range" in reasons:
            reason += f" (nodecast reads up to {_LIMIT_NS // 1000:,} us)"
        first = values[bad[0]]
        raise NumberError(reason, len(bad), first if type(first) is int else str(first))
    return np.asarray(converted, dtype=np.int64)


def int_field(value: Any, default: int, strict: bool = False) -> Any:
    """An integer field that may be absent, text or a float-as-text.

    Absent (None) gives ``default``. A value that is no finite number gives
    ``default`` too, or with ``strict`` the reason (``_NOT_A_NUMBER``,
    ``_NOT_FINITE``). Range is checked by ``int_column``.
    """
    if type(value) is int:
        return value
    if value is None:
        return default
    try:
        number = Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        return _NOT_A_NUMBER if strict else default
    if not number.is_finite():
        return _NOT_FINITE if strict else default
    if number.adjusted() > 40:
        # Out of every column's range; stand in for it rather than build a huge integer.
        return (1 << 140) if number > 0 else -(1 << 140)
    return int(number)


def int_column(
    raw: list[Any],
    out: np.ndarray,
    default: int,
    field: str,
    source: str,
    *,
    strict: bool = False,
    minimum: int | None = None,
    events: str = "GPU events",
) -> None:
    """Fill ``out`` with ``int_field`` of every raw value, checking the range of ``out``'s dtype.

    A value outside the range (or below ``minimum``), or with ``strict`` no
    number at all, is an InputError naming ``field`` and counting the events:
    numpy would otherwise wrap it silently or raise OverflowError.
    """
    info = np.iinfo(out.dtype)
    lo = info.min if minimum is None else max(minimum, info.min)
    ints = [int_field(v, default, strict) for v in raw]
    try:
        values = np.fromiter(ints, dtype=np.int64, count=len(ints))
    except (TypeError, ValueError, OverflowError):  # a reason (text) or an integer beyond int64
        values = None
    if values is not None and not ((values < lo) | (values > info.max)).any():
        out[:] = values
        return
    # Only a bad file gets here: find which values are wrong, one by one.
    def problem(x: Any) -> str:
        if isinstance(x, str):
            return x
        if lo <= x <= info.max:
            return ""
        return "negative" if x < 0 and lo == 0 else "out of range"

    reasons = [problem(x) for x in ints]
    bad = [i for i, r in enumerate(reasons) if r]
    kinds = list(dict.fromkeys(reasons[i] for i in bad))
    reason = " or ".join(kinds)
    if "out of range" in kinds:
        reason += f" (nodecast keeps it in {lo}..{info.max})"
    raise InputError(
        f"{reason} in {len(bad):,} of {len(raw):,} {events} (first: {raw[bad[0]]!r})",
        path=source or None,
        key=field,
        hint="The trace is damaged or was edited; save it again from the profiler",
    )


def ns_or_error(raw: list[Any], field: str, source: str, events: str) -> np.ndarray:
    """``us_text_to_ns``, its NumberError turned into an InputError naming the field."""
    try:
        return us_text_to_ns(raw)
    except NumberError as exc:
        raise InputError(
            f"{exc.reason} in {exc.count:,} of {len(raw):,} {events} (first: {exc.first!r})",
            path=source or None,
            key=field,
            hint="The trace is damaged or was edited; save it again from the profiler",
        ) from None


def lenient_ns(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``us_text_to_ns`` of a field read only where it can be: (ns, ok), 0 and False where absent or no number."""
    if None not in values:
        try:
            return us_text_to_ns(values), np.ones(len(values), dtype=bool)
        except NumberError:
            pass
    ns = [None if v is None else _exact_ns(v) for v in values]
    ok = np.fromiter((type(v) is int for v in ns), dtype=bool, count=len(ns))
    return np.array([v if type(v) is int else 0 for v in ns], dtype=np.int64), ok
