"""``nodecast kernels --html`` opens offline in Chromium, draws every figure, and shows ``--json``'s headline: the
kernel time measured on the source, projected on the target with the roofline's interval, and (against a target
run) measured there with the roofline's WMAPE. Input: the real V100 Nsight Compute set of ../shared/data/traces."""

from __future__ import annotations

import json

from nodecast.cli import main
from nodecast.report.html.units import fmt


def test_headline_equals_the_json_and_every_figure_draws(shared_traces, tmp_path, open_html):
    """V100 -> H100 (the roofline paper's Table 1 machines), scored against the same launches: the page's numbers are
    --json's headline (exact and as printed), the per-kernel table's total is its total row."""
    files = sorted(shared_traces.glob("ncu-csv_v100_*.csv"))
    html, doc_path = tmp_path / "kernels.html", tmp_path / "kernels.json"
    assert main(["kernels", *map(str, files), "--from", "v100-pcie-server", "--to", "h100-pcie-server",
                 "--target-metrics", *map(str, files), "--json", str(doc_path), "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    shown = page.headline()
    assert [(n["label"], n["value"], n["low"], n["high"]) for n in shown] == [
        (n["label"], n["value"], n["low"], n["high"]) for n in doc["headline"]]
    assert [n["text"] for n in shown] == [fmt(n["value"], n["unit"]) for n in doc["headline"]]
    assert doc["headline"][0]["value"] == doc["total"]["source_s"]
    assert doc["headline"][1]["value"] == doc["total"]["roofline_s"]
    titles = page.page.eval_on_selector_all(".figure h3", "els => els.map(e => e.textContent)")
    assert titles[0].startswith("Per kernel:") and len([t for t in titles if t.startswith("Kernels on")]) == 2
    assert titles[-1] == "Per-launch error against h100-pcie-server"
    total = page.page.eval_on_selector_all("section#tables table", "ts => Array.from(ts[0].tBodies[0].rows).pop()"
                                           ".children[2].dataset.value")
    assert float(total) == doc["total"]["source_s"]
    inputs = page.page.inner_text("#inputs")
    assert "v100-pcie-server.toml" in inputs and "Euro-Par 2024, Table 1" in inputs and "roofline" in inputs
