"""``nodecast evaluate A B --html`` opens offline in Chromium, draws every figure, and shows --json's headline."""

from __future__ import annotations

import json

from nodecast.cli import main
from nodecast.report.html.units import fmt

HEAT = "nsys_omp-offload-heat-8000_t4_data-region{}.sqlite"


def test_evaluation_page_shows_the_json_headline_and_draws_every_figure(shared_traces, tmp_path, open_html):
    """Two real nsys runs of one program on a T4: the page's numbers are --json's headline, which holds the whole
    run's end to end (B measured, A forecast, error) and the best WMAPE per op category; four figures draw."""
    html, doc_path = tmp_path / "evaluate.html", tmp_path / "evaluate.json"
    assert main(["evaluate", str(shared_traces / HEAT.format("")), str(shared_traces / HEAT.format("-run3")),
                 "--json", str(doc_path), "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    shown = page.headline()
    assert [(n["label"], n["value"]) for n in shown] == [(n["label"], n["value"]) for n in doc["headline"]]
    assert [n["text"] for n in shown] == [fmt(n["value"], n["unit"]) for n in doc["headline"]]
    whole = {row["quantity"]: row for row in doc["whole_run"]}
    e2e = whole["end to end (first API call to last GPU op end)"]
    assert [n["value"] for n in doc["headline"][:3]] == [e2e["actual on B"], e2e["forecast on B"], 100 * e2e["error"]]
    wmape = {row["model"]: row for row in doc["wmape"]}
    for n in doc["headline"][3:]:
        category, model = n["label"].split(": lowest per-op WMAPE (")
        assert n["value"] == wmape[model.rstrip(")")][category]
        assert n["value"] == min(r[category] for m, r in wmape.items() if m != "unchanged" and r[category] is not None)
    titles = page.page.eval_on_selector_all(".figure h3", "els => els.map(e => e.textContent)")
    assert titles == ["Per-op error per model (AHEAD Fig. 11)", "WMAPE per model and transfer kind",
                      "Run B as measured, run A as forecast on B", "The whole run: on A, actual on B, forecast on B"]
    assert page.timeline_ops("nc-timeline-timeline") == [325, 325]  # both runs' graphs: 325 ops each
