"""Numbers in the HTML report read with their unit, as in the terminal tables."""

from __future__ import annotations

import math

import pytest

from nodecast.report.html.units import UNITS, check_unit, fmt
from nodecast.report.tables import fmt_bytes, fmt_seconds


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (0.0015, "s", "1.5 ms"), (1500, "s", "1,500 s"), (1023.6 * 1024**2, "B", "1 GiB"),
    (1.946e12, "B/s", "1,946 GB/s"), (19.5e12, "flop/s", "19,500 GFlop/s"), (0.25, "flop/B", "0.25 flop/B"),
    (12.345, "%", "12.3 %"), (0.5, "share", "50.0 %"), (1234567, "count", "1,234,567"), (1.234, "x", "1.23×"),
    (12345.6, "", "12,346"), ("PCIe 5.0 x16", "", "PCIe 5.0 x16"), (math.nan, "s", "—"), (None, "B", "—"),
])
def test_fmt_prints_each_unit_as_the_terminal_does(value, unit, shown):
    """Each unit reads as a person expects (GB/s with 1 GB = 1e9 B, binary byte prefixes, no exponent)."""
    assert fmt(value, unit) == shown


def test_time_and_byte_units_are_the_terminal_formatters():
    """The report and the terminal print the same text for the same time or byte count."""
    for v in (3e-10, 4.56e-7, 0.0123, 7.0, 86400.0):
        assert fmt(v, "s") == fmt_seconds(v)
    for v in (0, 1023, 1536, 5 * 1024**3, 3.3e15):
        assert fmt(v, "B") == fmt_bytes(v)


def test_unknown_units_and_text_where_a_number_is_due_are_refused():
    """A misspelt unit or a text value in a numeric unit is a caller's bug, named in the error."""
    with pytest.raises(ValueError, match="unknown unit 'ms'"):
        check_unit("ms")
    with pytest.raises(ValueError, match="not a number"):
        fmt("fast", "s")
    assert set(UNITS) >= {"s", "B", "B/s", "flop/s", "%", "count"}


def test_pages_print_no_exponent_and_no_signed_zero(shared_traces, tmp_path, open_html):
    """Every number a page shows goes through ``fmt`` (issue 18): a replay 20 ns off of 831 ms read "-0.0 %" in
    its answer and table, and Titan's DRAM bandwidth from its data sheet read "2.496e+11" under the run's inputs."""
    import re

    from nodecast.cli import main

    trace = str(shared_traces / "nsys_vectoradd-streams_t4.sqlite")
    replay, forecast = tmp_path / "replay.html", tmp_path / "forecast.html"
    assert main(["replay", trace, "--html", str(replay)]) == 0
    assert main(["forecast", trace, "--to", "titan", "--html", str(forecast)]) == 0
    texts = {}
    for path in (replay, forecast):
        page = open_html(path)
        page.assert_clean()
        texts[path.name] = page.page.inner_text("body")
    assert "-0.0" not in texts["replay.html"] and "0.0 %" in texts["replay.html"]
    assert "data sheet tesla-k20x: 249.6 GB/s" in texts["forecast.html"]
    for name, text in texts.items():
        assert not re.findall(r".{0,30}\d[eE][+-]?\d.{0,10}", text), name
