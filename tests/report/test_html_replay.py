"""``nodecast replay --html`` opens offline in Chromium, draws both timelines, and shows --json's headline numbers."""

from __future__ import annotations

import json

from nodecast.cli import main

KMEANS = "nsys_openacc-kmeans_rtx3080.sqlite"


def test_replay_page_shows_the_json_headline_and_every_op(shared_traces, tmp_path, open_html):
    """Headline = --json's (end to end measured, replayed, error in %); both timelines hold every op of the graph."""
    html, doc_path = tmp_path / "replay.html", tmp_path / "replay.json"
    assert main(["replay", str(shared_traces / KMEANS), "--json", str(doc_path), "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert [(n["label"], n["value"]) for n in page.headline()] == [(n["label"], n["value"]) for n in doc["headline"]]
    e2e = doc["end_to_end_s"]
    assert [n["value"] for n in doc["headline"]] == [e2e["measured"], e2e["replayed"], 100 * e2e["error"]]
    n_ops = sum(v for k, v in doc["graph"].items() if k.startswith("op:"))
    assert page.timeline_ops("nc-timeline-timeline") == [n_ops, n_ops] and n_ops == 282
    assert "Every op keeps its measured duration" in page.page.inner_text("#not-modelled")
