"""Checked conversion of untrusted values: what passes, what is refused, and how the refusal reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.values import INT64_MAX, INT64_MIN, as_float, as_int, as_ints, json_kind, where


@pytest.mark.parametrize(("value", "expected"), [
    (7, 7), (np.int16(-3), -3), (3.0, 3), (" 42 ", 42), ("1e3", 1000), ("-0", 0), (INT64_MAX, INT64_MAX),
])
def test_as_int_accepts_what_stands_for_an_integer(value, expected):
    """Ints, whole floats (SQLite may return 3.0) and integer text, blanks around it, come back as int."""
    got = as_int(value, path="f", field="x")
    assert got == expected and type(got) is int


@pytest.mark.parametrize(("value", "reason"), [
    (None, r"is empty \(null\)"),
    ("", "is empty"),
    ("abc", "'abc' is not an integer"),
    (True, r"is a boolean \(true\), not a number"),
    (b"\x01", r"holds binary data \(a blob\), not a number"),
    ([1], "is a list, not a number"),
    ({"a": 1}, "is an object, not a number"),
    (math.nan, r"nan is not a number \(NaN\)"),
    ("nan", r"'nan' is not a number \(NaN\)"),
    (math.inf, "inf is infinite"),
    ("1e400", "'1e400' is infinite"),
    (2.5, "2.5 is not a whole number"),
    (1e300, r"1e\+300 is out of range \(must be a 64-bit integer\)"),
    (INT64_MAX + 1, r"9223372036854775808 is out of range \(must be a 64-bit integer\)"),
    (INT64_MIN - 1, r"-9223372036854775809 is out of range \(must be a 64-bit integer\)"),
])
def test_as_int_refuses_with_file_field_and_row(value, reason):
    """Each non-integer gives one InputError reading '<file>: <field>, row <n>: <reason>. <hint>'."""
    with pytest.raises(InputError, match=rf"^t\.sqlite: T\.c, row 3: {reason}\. The file is damaged") as info:
        as_int(value, path="t.sqlite", field="T.c", row=3)
    assert "\n" not in info.value.message


def test_as_int_bounds_are_inclusive_and_named():
    """ge and le are inclusive; the message states the rule broken."""
    assert as_int(0, path="f", field="n", ge=0, le=5) == 0 and as_int(5, path="f", field="n", ge=0, le=5) == 5
    with pytest.raises(InputError, match=r"-1 is out of range \(must be >= 0 and <= 5\)"):
        as_int(-1, path="f", field="n", ge=0, le=5)
    with pytest.raises(InputError, match=r"6 is out of range \(must be <= 5\)"):
        as_int(6, path="f", field="n", le=5)


def test_as_int_reads_hex_and_json_refuses_text():
    """base=16 reads StarPU's hashes; text=False (JSON) refuses a quoted number."""
    assert as_int("617e5fe6", path="f", field="h", base=16) == 0x617E5FE6
    with pytest.raises(InputError, match="'xyz' is not a base-16 integer"):
        as_int("xyz", path="f", field="h", base=16)
    with pytest.raises(InputError, match="'3' is not an integer"):
        as_int("3", path="f", field="k", text=False)


@pytest.mark.parametrize(("value", "kwargs", "expected"), [
    ("2.5e-3", {}, 2.5e-3), (3, {}, 3.0), ("nan", {"nan_ok": True}, math.nan), ("inf", {"inf_ok": True}, math.inf),
    (0.0, {"ge": 0.0}, 0.0), (1.0, {"le": 1.0}, 1.0),
])
def test_as_float_accepts_numbers_within_bounds(value, kwargs, expected):
    """Numbers and numeric text pass; NaN and infinity only when allowed; bounds ge/le are inclusive."""
    got = as_float(value, path="f", field="x", **kwargs)
    assert got == expected or (math.isnan(got) and math.isnan(expected))


@pytest.mark.parametrize(("value", "kwargs", "reason"), [
    ("nan", {}, r"'nan' is not a number \(NaN\)"),
    ("-inf", {}, "'-inf' is infinite or beyond a double's range"),
    ("1e400", {}, "'1e400' is infinite or beyond a double's range"),
    (10**400, {}, r"1000000000\d+\.\.\. is out of range"),
    ("1e308", {"le": 1e6}, r"'1e308' is out of range \(must be <= 1e\+06\)"),
    (0.0, {"gt": 0.0}, r"0\.0 is out of range \(must be > 0\)"),
    ("-inf", {"inf_ok": True, "ge": 0.0}, r"'-inf' is out of range \(must be >= 0\)"),
    ("2.4e9", {"text": False}, r"'2\.4e9' is not a number"),
    (None, {}, r"is empty \(null\)"),
])
def test_as_float_refusals(value, kwargs, reason):
    """NaN, infinities, out-of-range values and (for JSON) quoted numbers are refused with the value shown."""
    with pytest.raises(InputError, match=rf"^f\.txt: mean, line 9: {reason}"):
        as_float(value, path="f.txt", field="mean", row="line 9", **kwargs)


def test_as_ints_fast_path_and_first_bad_row():
    """A column of ints becomes an int64 array; the first bad value is named by its 1-based row."""
    assert as_ints([3, 1, 2], path="f", field="T.id").tolist() == [3, 1, 2]
    assert as_ints([3.0, "4"], path="f", field="T.id").dtype == np.int64
    with pytest.raises(InputError, match=r"T\.id, row 2: 'x' is not an integer"):
        as_ints([1, "x", None], path="f", field="T.id")
    with pytest.raises(InputError, match=r"T\.id, row 1: 70000 is out of range \(must be <= 32,767\)"):
        as_ints([70000], path="f", field="T.id", le=(1 << 15) - 1)


def test_where_and_json_kind_read_as_a_user_writes_them():
    """Keys read 'field, row n' or 'field, line n'; JSON values are named as JSON names them."""
    assert (where("T.c"), where("T.c", 2), where("Start", "line 7")) == ("T.c", "T.c, row 2", "Start, line 7")
    assert [json_kind(v) for v in (None, True, 3, "A", [], {})] == [
        "null", "true", "a number (3)", "a string ('A')", "a list", "an object"]


def test_long_values_are_shortened_in_messages():
    """A huge text value is cut to 40 characters in the message, which stays one line."""
    with pytest.raises(InputError) as info:
        as_int("x" * 10_000 + "\n", path="f", field="c")
    assert len(info.value.message) < 200 and "..." in info.value.message
