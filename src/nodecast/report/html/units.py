"""Numbers with their unit, as the terminal tables print them.

Components of the HTML report name a unit per number (``"s"``, ``"B"``,
``"B/s"`` ...); ``fmt`` turns a value into the text a person reads, through
the same formatters as the terminal (``report.tables``), so a time reads
``1.5 ms`` in both. ``FORMAT_JS`` is the browser's copy of ``fmt_seconds`` and
``fmt_bytes`` for tick labels and tooltips; the browser test checks that
both give the same text for the same value.
"""

from __future__ import annotations

import math

from nodecast.report.tables import fmt_bytes, fmt_int, fmt_pct, fmt_ratio, fmt_seconds, fmt_share, significant

#: Unit names a component accepts, with what the reader sees.
UNITS = {
    "s": "time (ns, µs, ms, s)",
    "B": "bytes (B, KiB, MiB, GiB ...)",
    "B/s": "bandwidth, shown in GB/s (1 GB = 1e9 B)",
    "flop/s": "compute rate, shown in GFlop/s (1 GFlop = 1e9 flop)",
    "flop/B": "arithmetic intensity, flop per byte",
    "%": "a percentage (value already in %)",
    "share": "a fraction 0-1, shown in %",
    "count": "a whole number",
    "x": "a ratio, shown as 1.23×",
    "": "text or a number without unit",
}


def check_unit(unit: str) -> str:
    """``unit`` if the report knows how to print it; else ValueError naming the known ones."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; use one of {', '.join(repr(u) for u in UNITS)}")
    return unit


def _number(value: object) -> float | None:
    """``value`` as a float, or None when it is not a number (text cells)."""
    if isinstance(value, bool):
        return float(value)
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def fmt(value: object, unit: str) -> str:
    """``value`` printed with ``unit`` (one of ``UNITS``); NaN and None print as an em dash."""
    check_unit(unit)
    if value is None:
        return "—"
    v = _number(value)
    if unit == "" and (v is None or isinstance(value, str)):
        return str(value)
    if v is None:
        raise ValueError(f"{value!r} is not a number (unit {unit!r})")
    if math.isnan(v):
        return "—"
    if unit == "s":
        return fmt_seconds(v)
    if unit == "B":
        return fmt_bytes(v)
    if unit == "B/s":
        return f"{significant(v / 1e9)} GB/s"
    if unit == "flop/s":
        return f"{significant(v / 1e9)} GFlop/s"
    if unit == "flop/B":
        return f"{significant(v)} flop/B"
    if unit == "%":
        return fmt_pct(v)
    if unit == "share":
        return fmt_share(v)
    if unit == "count":
        return fmt_int(v)
    if unit == "x":
        return fmt_ratio(v)
    return significant(v, 4)


#: The browser's formatters: ``significant``, ``fmtSeconds`` and ``fmtBytes`` as in report.tables
#: (3 significant digits, thousands separators, round half to even, next unit when rounding reaches it).
FORMAT_JS = r"""
function ncSignificant(v, digits) {
  digits = digits || 3;
  if (v === 0 || !isFinite(v)) return isNaN(v) ? "nan" : String(v).replace("Infinity", "inf");
  const mag = Math.floor(Math.log10(Math.abs(v)));
  const dec = Math.max(0, digits - 1 - mag);
  let t = v.toLocaleString("en-US", {minimumFractionDigits: dec, maximumFractionDigits: dec,
                                     roundingMode: "halfEven", useGrouping: true});
  if (t.indexOf(".") >= 0) t = t.replace(/0+$/, "").replace(/\.$/, "");
  return t;
}
function ncInUnits(v, units, integerBase) {
  const a = Math.abs(v);
  let i = 0;
  for (let k = 0; k < units.length; k++) if (a >= units[k][0]) i = k;
  for (;;) {
    const scale = units[i][0], x = v / scale;
    const t = (integerBase && i === 0)
      ? x.toLocaleString("en-US", {maximumFractionDigits: 0, roundingMode: "halfEven"})
      : ncSignificant(x);
    if (i + 1 < units.length && Math.abs(parseFloat(t.replace(/,/g, ""))) >= units[i + 1][0] / scale) { i++; continue; }
    return t + " " + units[i][1];
  }
}
const NC_TIME_UNITS = [[1e-9, "ns"], [1e-6, "µs"], [1e-3, "ms"], [1, "s"]];
const NC_BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"].map((n, k) => [Math.pow(1024, k), n]);
// A tick label: the unit of the largest tick, as many decimals as the spacing of the ticks needs
// (zoomed in to 200.0 ms - 200.8 ms, the ticks read 200.0 ms, 200.2 ms ..., not 200 ms five times).
function ncFmtTick(tick, ticks, units) {
  let top = 0;
  for (const t of ticks) top = Math.max(top, Math.abs(t));
  let i = 0;
  for (let k = 0; k < units.length; k++) if (top >= units[k][0]) i = k;
  const scale = units[i][0], step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) / scale : 0;
  const dec = step > 0 ? Math.min(9, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9))) : 0;
  return (tick / scale).toLocaleString("en-US", {minimumFractionDigits: dec, maximumFractionDigits: dec,
                                                 roundingMode: "halfEven"}) + " " + units[i][1];
}
function ncFmtSecondsTick(tick, ticks) { return ncFmtTick(tick, ticks, NC_TIME_UNITS); }
function ncFmtBytesTick(tick, ticks) { return ncFmtTick(tick, ticks, NC_BYTE_UNITS); }
function ncFmtSeconds(v) { return isNaN(v) ? "—" : v === 0 ? "0 s" : ncInUnits(v, NC_TIME_UNITS, false); }
function ncFmtBytes(v) { return isNaN(v) ? "—" : ncInUnits(v, NC_BYTE_UNITS, true); }
"""
