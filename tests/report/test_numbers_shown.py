"""Numbers as a person reads them (issue 18 item 5): no "-0.0 %", no raw exponent, and an interval of zero width
printed as an interval, not as the "—" of a missing one."""

from __future__ import annotations

import math
import re

import pytest

from nodecast.report.html.units import fmt
from nodecast.report.tables import fmt_interval_seconds, fmt_pct, fmt_ratio, fmt_share, significant

EXPONENT = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (-0.0, "%", "0.0 %"), (-0.04, "%", "0.0 %"), (-0.05001, "%", "-0.1 %"), (-1e-12, "share", "0.0 %"),
    (-0.0, "x", "0×"), (-0.0, "", "0"), (-0.0, "s", "0 s"), (-0.0, "count", "0"),
])
def test_a_value_that_rounds_to_zero_reads_0_not_minus_0(value, unit, shown):
    """A replay 20 ns off of 831 ms read "-0.0 %" on the page and at the terminal: zero has no sign."""
    assert fmt(value, unit) == shown


def test_terminal_percentages_and_significant_digits_drop_the_sign_of_zero():
    """The terminal's formatters, which the page's go through, give the same text."""
    assert (fmt_pct(-0.0), fmt_pct(-0.02), fmt_share(-1e-9), significant(-0.0)) == ("0.0 %", "0.0 %", "0.0 %", "0")
    assert fmt_pct(-0.25) == "-0.2 %" and fmt_pct(0.25) == "0.2 %"


def test_a_ratio_reads_the_same_at_the_terminal_and_on_the_page():
    """One formatter for a ratio: "2.83×" in both (the terminal printed "2.835x", the page "2.83×")."""
    for v in (2.8347, 0.98321, 1.0, 12.5):
        assert fmt_ratio(v) == fmt(v, "x")
    assert fmt_ratio(math.nan) == "—"


def test_an_interval_of_zero_width_is_printed_and_a_missing_one_is_a_dash():
    """low == high (or equal once rounded) is still an interval the models gave: both ends print; "—" only when
    there is none (NaN or None)."""
    assert fmt_interval_seconds(0.8172829, 0.8172846) == "817 ms – 817 ms"
    assert fmt_interval_seconds(0.5, 0.5) == "500 ms – 500 ms"
    assert fmt_interval_seconds(0.5, 0.75) == "500 ms – 750 ms"
    assert fmt_interval_seconds(math.nan, math.nan) == "—"
    assert fmt_interval_seconds(None, None) == "—"


def test_machine_values_overridden_from_a_data_sheet_name_the_sheet_value_with_its_unit():
    """Titan's machine file gives 250 GB/s where data sheet tesla-k20x says 249.6 GB/s: the source reads
    "(data sheet tesla-k20x: 249.6 GB/s)", not "2.496e+11", on the page and in ``machines show``."""
    from nodecast.machines import load_machine
    from nodecast.report.html.context import machine_inputs

    values = machine_inputs(load_machine("titan")).values
    dram = values.loc[values["field"] == "GPU dram bandwidth", "source"].iat[0]
    assert "data sheet tesla-k20x: 249.6 GB/s" in dram
    assert not [s for s in values["source"] if EXPONENT.search(s)]


def test_provenance_of_overridden_values_prints_each_unit_without_exponent():
    """Sizes, rates, clocks and times in a provenance read with their unit."""
    from nodecast.machines.part_tables import merge

    base = {"levels": {"l2": {"size_bytes": 52428800.0, "bandwidth_bps": 1.2e13}}, "clock_hz": 1.98e9,
            "launch_s": 5.854e-4, "peak_flops": {"fp64": {"fma": 3.35e13, "addmul": 1.675e13}}}
    own = {"levels": {"l2": {"size_bytes": 1.0, "bandwidth_bps": 1.0}}, "clock_hz": 1.0, "launch_s": 1.0,
           "peak_flops": {"fp64": {"fma": 1.0, "addmul": 0.5}}}
    _, provenance = merge(base, own, "gpu", "data sheet x", ("gpu.peak_flops",))
    assert provenance["gpu.levels.l2.size_bytes"].endswith("(data sheet x: 50 MiB)")
    assert provenance["gpu.levels.l2.bandwidth_bps"].endswith("(data sheet x: 12,000 GB/s)")
    assert provenance["gpu.clock_hz"].endswith("(data sheet x: 1.98 GHz)")
    assert provenance["gpu.launch_s"].endswith("(data sheet x: 585 µs)")
    assert provenance["gpu.peak_flops.fp64"].endswith("(data sheet x: fma 33,500 GFlop/s, addmul 16,750 GFlop/s)")
    assert not [v for v in provenance.values() if EXPONENT.search(v)]
