"""A report page: sections in their fixed order, one self-contained file, written whole or not at all."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from nodecast.errors import InputError
from nodecast.report import html as rh


def small_page() -> rh.Page:
    """A page with one component of each section (inputs built here)."""
    page = rh.Page("Forecast </script> test")
    page.not_modelled = rh.not_modelled(None, ["host time unchanged"])
    page.figures.append(rh.error_boxes({"ahead": np.array([1.0, 2.0, 3.0, 50.0])}))
    page.tables.append(rh.table(pd.DataFrame({"kind": ["kernel"], "time_s": [0.25]}), {"time_s": "s"}))
    page.inputs = rh.inputs(rh.RunInputs(trace="run.sqlite", version="0.1.0", command="nodecast forecast run.sqlite"))
    page.headline = rh.headline([rh.Number("end-to-end", 0.25, "s")])
    return page


def test_sections_come_in_their_fixed_order_whatever_order_they_were_filled():
    """Answer first, then inputs, tables, figures and what was not modelled."""
    text = rh.build_page(small_page())
    order = [m.group(1) for m in re.finditer(r'<section id="([a-z-]+)">', text)]
    assert order == ["answer", "inputs", "tables", "figures", "not-modelled"]


def test_the_page_loads_nothing_from_elsewhere():
    """No script, style or image is referenced by address; the policy forbids any fetch."""
    text = rh.build_page(small_page())
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", text)
    assert "<link" not in text
    assert "default-src 'none'" in text
    assert "/* BEGIN bokeh.min.js */" in text  # BokehJS inline, not linked
    # A title with '</script>' cannot end an inline script early.
    assert text.count("</script>") == text.count("<script")


def test_write_page_writes_html_only_and_leaves_no_partial_file(tmp_path):
    """A wrong extension is refused before writing; a failure while building leaves the old file as it was."""
    with pytest.raises(InputError, match="cannot write an HTML report as .txt"):
        rh.write_page(small_page(), tmp_path / "r.txt")
    out = tmp_path / "r.html"
    rh.write_page(small_page(), out)
    before = out.read_text()
    broken = small_page()
    broken.figures.append(rh.error_boxes({"x": [1.0]}))  # a second figure with the same anchor
    with pytest.raises(ValueError, match="share the anchor errors"):
        rh.write_page(broken, out)
    assert out.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]
