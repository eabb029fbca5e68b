"""``nodecast project --html`` opens offline in Chromium, draws its figures, and shows --json's headline numbers."""

from __future__ import annotations

import json

import numpy as np

from nodecast.cli import main

KINETO = "kineto_training-rank0_v100.json.gz"


def test_projection_page_shows_the_json_headline_and_per_kernel_bars(shared_traces, tmp_path, open_html):
    """A real PyTorch training step (V100 -> H100): headline = --json's (transfer and kernel time on B by the chain's
    first model, the other models' totals as interval), equal to the summary's sums; figures draw; the ops no model
    projects (memsets) are listed as not modelled."""
    html, doc_path = tmp_path / "project.html", tmp_path / "project.json"
    assert main(["project", str(shared_traces / KINETO), "--to", "h100-pcie-server", "--json", str(doc_path),
                 "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert [(n["label"], n["value"], n["low"], n["high"]) for n in page.headline()] == [
        (n["label"], n["value"], n["low"], n["high"]) for n in doc["headline"]]
    rows = {r["category"]: r for r in doc["summary"]}
    kernel = next(n for n in doc["headline"] if n["label"].startswith("kernel GPU time"))
    assert kernel["label"].endswith("default-kernel")
    np.testing.assert_allclose(kernel["value"], rows["kernel"]["default-kernel_s"], rtol=1e-12)
    totals = [rows["kernel"][f"{m}_s"] for m in ("dram-ratio", "flops-ratio", "wave-scaling", "default-kernel")]
    np.testing.assert_allclose([kernel["low"], kernel["high"]], [min(totals), max(totals)], rtol=1e-12)
    assert "memset" in page.page.inner_text("#not-modelled")
