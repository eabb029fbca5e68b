"""``nodecast forecast --to a,b --sweep ... --html``: one page for every target, its headline equal to --json's."""

from __future__ import annotations

import json

from nodecast.cli import main

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"


def test_sweep_page_shows_the_json_headline_and_a_line_per_machine(shared_traces, tmp_path, open_html):
    """Two machines x three link generations: headline = --json's (A, then each target), a sweep line per machine."""
    html, doc_path = tmp_path / "targets.html", tmp_path / "targets.json"
    assert main(["forecast", str(shared_traces / VECTORADD), "--to", "h100-pcie-server,a100-pcie-40gb",
                 "--sweep", "link.gen=3,4,5", "--jobs", "1", "--json", str(doc_path), "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert [(n["label"], n["value"], n["low"], n["high"]) for n in page.headline()] == [
        (n["label"], n["value"], n["low"], n["high"]) for n in doc["headline"]]
    assert [n["value"] for n in doc["headline"]] == [doc["measured_end_to_end_s"],
                                                     *(t["end_to_end_s"] for t in doc["targets"])]
    lines = page.page.evaluate("""() => Bokeh.documents[0].roots().flatMap(r => r.renderers || [])
        .map(r => r.data_source && r.data_source.name).filter(n => n && n.startsWith('sweep:'))""")
    assert sorted(set(lines)) == ["sweep:a100-pcie-40gb", "sweep:h100-pcie-server"]
    rows = page.page.eval_on_selector_all("section#tables tbody tr", "rows => rows.map(r => r.children[0].textContent)")
    assert rows == [t["target"] for t in doc["targets"]]
