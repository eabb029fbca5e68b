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
                                                     *(t["end_to_end_s"] for t in doc["targets"]),
                                                     max(t["speedup"] for t in doc["targets"])]
    lines = page.page.evaluate("""() => Bokeh.documents[0].roots().flatMap(r => r.renderers || [])
        .map(r => r.data_source && r.data_source.name).filter(n => n && n.startsWith('sweep:'))""")
    assert sorted(set(lines)) == ["sweep:a100-pcie-40gb", "sweep:h100-pcie-server"]
    rows = page.page.eval_on_selector_all("section#tables tbody tr", "rows => rows.map(r => r.children[0].textContent)")
    # the unchanged case (A's times, replayed) first, as --json's record of it, then one row per target
    assert rows == [doc["unchanged"]["target"], *(t["target"] for t in doc["targets"])]
    assert rows[0] == "unchanged (A's times)"
    assert doc["unchanged"]["end_to_end_s"] == doc["replayed_end_to_end_s"]


def test_several_targets_page_has_the_measured_run_in_its_chart_and_a_speedup_card(shared_traces, tmp_path,
                                                                                    open_html):
    """`forecast TRACE --to titan,summit --html` (issue 18): the chart of end to end per target starts with the
    run on A, as measured (its total) and as replayed (split along its critical path like every target), and the
    answer ends with the speed-up A / B of the fastest target, as the one-target page ends with its own."""
    html, doc_path = tmp_path / "two.html", tmp_path / "two.json"
    assert main(["forecast", str(shared_traces / VECTORADD), "--to", "titan,summit", "--jobs", "1",
                 "--json", str(doc_path), "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    bars = page.data("per-target:bars")
    source = doc["source"]
    assert bars["run"] == [f"{source} (A, measured)", f"{source} (A, replayed)", "titan", "summit"]
    assert bars["total"][0] == doc["measured_end_to_end_s"]
    assert abs(bars["total"][1] - doc["replayed_end_to_end_s"]) < 1e-9
    assert bars["GPU work"][1] > 0 and bars["host work"][1] > 0  # A's replay is split as the targets are
    assert [abs(t - r["end_to_end_s"]) < 1e-9 for t, r in zip(bars["total"][2:], doc["targets"], strict=True)] == [
        True, True]
    cards = page.headline()
    fastest = max(doc["targets"], key=lambda r: r["speedup"])
    assert fastest["target"] == "summit" and fastest["speedup"] > 1
    assert cards[-1]["label"].startswith("speed-up (A / B) on summit (the fastest target), above 1: B is faster")
    assert cards[-1]["value"] == fastest["speedup"] == doc["measured_end_to_end_s"] / fastest["end_to_end_s"]
    assert cards[-1]["text"] == "1.02×"
    # Each target's decisive notes are in the answer box, labelled with the target (they were only at the end).
    answer = page.page.inner_text("#answer")
    assert "(titan) host work kept as measured on A" in answer and "(summit) host work kept as measured on A" in answer
