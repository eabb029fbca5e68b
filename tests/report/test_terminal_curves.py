"""``report/terminal/curves.py``: which sizes the bandwidth table shows, and the table itself."""

from __future__ import annotations

import io
import re

import numpy as np
from rich.console import Console

from nodecast.machines import load_machine
from nodecast.models.curves import bandwidth_curves, parse_sizes
from nodecast.report import terminal
from nodecast.report.terminal.curves import table_sizes


def test_table_sizes_fall_back_to_the_sweep():
    """When none of 1 KiB ... 1 GiB is swept, up to five swept sizes are tabulated."""
    assert table_sizes(np.array([1, 2, 4, 8])) == [1, 2, 4, 8]
    assert table_sizes(np.array([2**10, 2**11, 2**20])) == [2**10, 2**20]


def test_render_prints_one_row_per_machine_class_and_model():
    """Titan's AHEAD curve printed through terminal.render: a row per class, GB/s at the tabulated sizes."""
    curves = bandwidth_curves([load_machine("titan")], sizes=parse_sizes("1Ki,1Mi"), models=["ahead"])
    out = io.StringIO()
    terminal.render(curves, Console(file=out, width=200))
    text = out.getvalue()
    assert "1 KiB" in text and "1 MiB" in text and "htod_pinned" in text and "1-byte cost L+O" in text
    wide = curves.at_sizes([2**20])
    bw = float(wide.xs(("titan", "htod_pinned", "ahead"))[2**20])
    assert f"{bw / 1e9:.4g}" in text


def test_table_prints_small_and_large_bandwidths_without_exponent():
    """A 1-byte cost of 1 s gives 1 KiB copies 0.000001024 GB/s ("1.024e-06" before) and GH200's DtoD reaches
    thousands of GB/s ("4,000", as every other table prints it): plain numbers, 4 significant digits."""
    curves = bandwidth_curves([load_machine("titan"), load_machine("gh200")], sizes=parse_sizes("1Ki,1Gi"),
                              models=["ahead", "back-of-envelope"], one_byte_fallback_s=1.0)
    out = io.StringIO()
    terminal.render(curves, Console(file=out, width=200))
    text = out.getvalue()
    assert "0.000001024" in text and "4,000" in text
    assert not re.search(r"\de[+-]\d", text)
