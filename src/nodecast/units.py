"""Numbers as people read them: SI times (``817 ms``), binary sizes (``1.5 GiB``), percentages, ratios.

A ground module (beside errors, values, text and words): models, traces and workflows write numbers into their
notes with it, and ``report/`` into its tables, so the same value reads the same everywhere. Pure functions of
floats to text; nothing here knows a table or a terminal (``report.tables`` does).
"""

from __future__ import annotations

import math


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, in plain notation (never ``1.02e+03``).

    Thousands are separated (``1,946``); a number of ``digits`` or more
    integer digits keeps them all (``12,345``); trailing zeros are dropped,
    as ``%g`` drops them (``1.5``, ``100``).
    """
    if value == 0:
        return "0"  # -0.0 too: a zero has no sign
    if not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _in_units(value: float, units: tuple[tuple[float, str], ...], integer_base: bool = False) -> str:
    """``value`` in the largest of ``units`` ((scale, name), ascending) that it reaches, 3 significant digits.

    When rounding carries the shown number up to the next unit's size
    (``1,024 MiB``, ``1,000 ms``), the next unit is used (``1 GiB``, ``1 s``).
    ``integer_base``: the smallest unit prints whole numbers (bytes).
    """
    a = abs(value)
    i = max((k for k, (scale, _) in enumerate(units) if a >= scale), default=0)
    while True:
        scale, name = units[i]
        x = value / scale
        text = f"{x:,.0f}" if integer_base and i == 0 else significant(x)
        if i + 1 < len(units) and abs(float(text.replace(",", ""))) >= units[i + 1][0] / scale:
            i += 1
            continue
        return f"{text} {name}"


_TIME_UNITS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
_BYTE_UNITS = tuple((1024.0**k, name) for k, name in enumerate(("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")))


def fmt_seconds(value: object) -> str:
    """A time in seconds printed with an SI prefix (ns, µs, ms, s), 3 significant digits, no exponent."""
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return "—"
    if v == 0:
        return "0 s"
    return _in_units(v, _TIME_UNITS)


def fmt_bytes(value: object) -> str:
    """A byte count with a binary prefix (KiB = 1024 B ... EiB), 3 significant digits, no exponent.

    ``1,023 MiB`` stays in MiB; what rounds to 1,024 of a unit is shown in the
    next one (``1 GiB``); bytes print whole (``1,000 B``).
    """
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return "—"
    return _in_units(v, _BYTE_UNITS, integer_base=True)


def unsigned_zero(text: str) -> str:
    """``text`` without its minus sign when every digit it shows is 0: a value that rounds to zero reads
    ``0.0 %``, not ``-0.0 %`` (a replay 20 ns off of 831 ms is not a negative error)."""
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


def fmt_pct(value: object) -> str:
    """A percentage (value already in %), one decimal; what rounds to zero reads ``0.0 %`` without a sign."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else unsigned_zero(f"{v:,.1f} %")


def fmt_share(value: object) -> str:
    """A 0-1 fraction printed as a percentage, as ``fmt_pct``."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else fmt_pct(100 * v)


def fmt_gbps(value: object) -> str:
    """Bytes/s printed as GB/s (1 GB = 1e9 B)."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else significant(v / 1e9)


def fmt_signed_seconds(value: object) -> str:
    """A change in seconds with its sign (``+1.5 ms``, ``-862 ms``, ``0 s``)."""
    v = float(value)  # type: ignore[arg-type]
    return ("+" if v > 0 else "-" if v < 0 else "") + fmt_seconds(abs(v))


def fmt_interval_seconds(low: float | None, high: float | None) -> str:
    """``low – high`` in seconds; "—" only when there is no interval (None or NaN).

    An interval of zero width, or narrower than the digits shown, prints
    both ends (``817 ms – 817 ms``): the models gave one and it is that
    narrow, which a dash (no interval at all) would hide. A caller whose
    result has no interval passes NaN.
    """
    if low is None or high is None or math.isnan(float(low)) or math.isnan(float(high)):
        return "—"
    return f"{fmt_seconds(low)} – {fmt_seconds(high)}"


def fmt_ratio(value: object) -> str:
    """A ratio (a speed-up: time on A / time on B) as ``2.83×``, 3 significant digits, as the HTML page prints
    it (``report.html.units``)."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{significant(v)}×"


def fmt_int(value: object) -> str:
    """An integer count with thousands separators."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{int(v):,}"
