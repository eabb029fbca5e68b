"""``nodecast forecast --html`` opens offline in Chromium, draws every figure, and shows --json's headline numbers."""

from __future__ import annotations

import json

from nodecast.cli import main
from nodecast.report.html.units import fmt

HEAT = "nsys_omp-offload-heat-8000_t4_data-region.sqlite"


def test_headline_equals_the_json_and_every_figure_draws(shared_traces, tmp_path, open_html):
    """A real nsys trace forecast T4 -> H100: the page's numbers (exact and printed) are --json's headline, which is
    end to end on A and B and their ratio; timelines (every op on A and B), critical path, per category and per
    kernel all draw; inputs name both machines' sources."""
    html, doc_path = tmp_path / "forecast.html", tmp_path / "forecast.json"
    assert main(["forecast", str(shared_traces / HEAT), "--to", "h100-pcie-server", "--json", str(doc_path),
                 "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    shown = page.headline()
    assert [(n["label"], n["value"], n["low"], n["high"]) for n in shown] == [
        (n["label"], n["value"], n["low"], n["high"]) for n in doc["headline"]]
    assert [n["text"] for n in shown] == [fmt(n["value"], n["unit"]) for n in doc["headline"]]
    e2e = doc["end_to_end_s"]
    assert [n["value"] for n in doc["headline"]] == [e2e["measured"], e2e["forecast"], e2e["measured"] / e2e["forecast"]]
    assert (doc["headline"][1]["low"], doc["headline"][1]["high"]) == (e2e["low"], e2e["high"])
    assert e2e["low"] < e2e["forecast"] < e2e["high"]  # wave scaling gives the kernels an interval
    page.assert_figures_drawn()
    titles = page.page.eval_on_selector_all(".figure h3", "els => els.map(e => e.textContent)")
    assert titles == ["Measured and forecast timelines", "Critical-path breakdown", "GPU time per category",
                      "GPU time per kernel"]
    assert page.timeline_ops("nc-timeline-timeline") == [325, 325]  # the graph's ops (the terminal says 325 ops)
    text = page.page.inner_text("#inputs")
    assert "h100-pcie-server.toml" in text and "data sheet t4" in text and "nodecast forecast" in text
    # Every GPU op was modelled, but the host work kept its time on A: the page says so (it said every op was).
    not_modelled = page.page.inner_text("#not-modelled")
    assert "every op was modelled" not in not_modelled and "Host work kept at its time on A" in not_modelled
    # The notes that decide whether to trust the answer are in the answer box (host work kept, host assumed).
    decisive = [n["text"] for n in doc["notes"] if n["severity"] == "decisive"]
    assert any(n.startswith("host work kept as measured on A") for n in decisive)
    answer = page.page.inner_text("#answer")
    assert all(n in answer for n in decisive)
