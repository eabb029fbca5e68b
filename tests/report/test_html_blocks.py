"""The report's HTML blocks: every number with its unit and its exact value, text escaped, tables sortable."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import pandas as pd
import pytest

from nodecast.report import html as rh
from nodecast.report.html.units import fmt


class Cells(HTMLParser):
    """(tag, attributes, text) of every element that carries a data-value, and all text in table cells."""

    def __init__(self) -> None:
        super().__init__()
        self.valued: list[tuple[str, dict, str]] = []
        self._open: list[tuple[str, dict, list[str]]] = []
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        self._open.append((tag, dict(attrs), []))

    def handle_endtag(self, tag):
        while self._open:
            t, attrs, text = self._open.pop()
            joined = "".join(text)
            if self._open:
                self._open[-1][2].append(joined)
            if "data-value" in attrs:
                self.valued.append((t, attrs, joined))
            if t in ("td", "th") and self.rows:
                self.rows[-1].append(joined)
            if t == tag:
                break

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)


def parse(text: str) -> Cells:
    p = Cells()
    p.feed(text)
    return p


def test_headline_prints_value_and_interval_with_unit_and_keeps_exact_values():
    """A forecast of 0.0123 s in [0.0115, 0.0131] reads 12.3 ms and its interval; data-value keeps every digit."""
    block = rh.headline([rh.Number("end-to-end on B", 0.012345678, "s", 0.0115, 0.0131, "model spread"),
                         rh.Number("GPU busy", 0.8125, "share")])
    got = parse(block.html).valued
    assert [(a["data-value"], t) for _, a, t in got] == [
        ("0.012345678", "12.3 ms"), ("0.0115", "11.5 ms"), ("0.0131", "13.1 ms"), ("0.8125", "81.2 %")]
    assert "interval" in block.html and "model spread" in block.html


def test_table_cells_carry_unit_text_and_exact_values_and_text_is_escaped():
    """Numeric cells show '1 GiB' with data-value 1073741824; a kernel named '<script>' is shown, not run."""
    df = pd.DataFrame({"kernel": ["<script>alert(1)</script>", "gemm & co"], "bytes": [2**30, 512],
                       "time_s": [0.0015, math.nan], "count": [3, 1_000_000]})
    block = rh.table(df, {"bytes": "B", "time_s": "s", "count": "count"}, title="Per kernel")
    assert "<script>" not in block.html and "&lt;script&gt;" in block.html
    cells = parse(block.html)
    assert cells.rows[0] == ["kernel", "bytes", "time_s", "count"]
    assert cells.rows[1] == ["<script>alert(1)</script>", "1 GiB", "1.5 ms", "3"]
    assert cells.rows[2] == ["gemm & co", "512 B", "—", "1,000,000"]
    values = [a["data-value"] for _, a, _ in cells.valued]
    assert values == ["1073741824.0", "0.0015", "3.0", "512.0", "nan", "1000000.0"]
    assert block.html.count('class="sortable num"') == 3 and block.html.count('class="sortable"') == 1


def test_table_refuses_units_for_columns_it_does_not_have():
    """A unit for a missing column is a caller's mistake named in the error, not a silently unformatted column."""
    with pytest.raises(ValueError, match="column 'time', which the table does not have"):
        rh.table(pd.DataFrame({"time_s": [1.0]}), {"time": "s"})


def test_inputs_show_machine_values_with_their_sources_and_the_command_line():
    """Each machine value is shown with its unit and where it came from; the command line is shell-quoted."""
    values = pd.DataFrame({"field": ["memory bandwidth", "link"], "value": [3.35e12, "PCIe 5.0 x16"],
                           "unit": ["B/s", ""], "source": ["NVIDIA H100 SXM data sheet", "host file"]})
    block = rh.inputs(rh.RunInputs(
        trace="/data/run 1.sqlite", version="0.1.0", command=["nodecast", "forecast", "run 1.sqlite"],
        trace_summary="nsys, 155 ops", machines=[rh.MachineInputs("H100", values)],
        models={"ahead": "copies: L + O + n/B"}))
    rows = parse(block.html).rows
    assert ["memory bandwidth", "3,350 GB/s", "NVIDIA H100 SXM data sheet"] in rows
    assert ["link", "PCIe 5.0 x16", "host file"] in rows
    assert "nodecast forecast &#x27;run 1.sqlite&#x27;" in block.html
    assert "copies: L + O + n/B" in block.html and "0.1.0" in block.html


def test_not_modelled_lists_kept_ops_and_every_assumption_or_says_none_was_kept():
    """Ops kept at their source time are a table with units; an empty list says every op was modelled."""
    kept = pd.DataFrame({"name": ["cudaDeviceSynchronize"], "time_s": [2e-4]})
    block = rh.not_modelled(kept, ["copies overlap kernels as on A", "host time unchanged"], {"time_s": "s"})
    assert parse(block.html).rows[1] == ["cudaDeviceSynchronize", "200 µs"]
    assert block.html.count("<li>") == 2
    assert "every op was modelled" in rh.not_modelled(None, []).html
    assert fmt(2e-4, "s") == "200 µs"


def test_infinite_cells_keep_a_value_the_sort_script_reads():
    """An infinite value's data-value is what JavaScript's parseFloat reads ('Infinity', not Python's 'inf', which
    it reads as NaN and sorts as missing); NaN stays 'nan' (missing: sorted last)."""
    df = pd.DataFrame({"oi": [math.inf, -math.inf, 2.0, math.nan]})
    cells = parse(rh.table(df, {"oi": "flop/B"}, title="Intensity").html)
    assert [a["data-value"] for _, a, _ in cells.valued] == ["Infinity", "-Infinity", "2.0", "nan"]
