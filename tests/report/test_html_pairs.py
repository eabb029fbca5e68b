"""``nodecast evaluate DIR_A DIR_B --html``: the page of many pairs opens offline and shows --json's headline."""

from __future__ import annotations

import json
import shutil

from nodecast.cli import main


def test_pairs_page_shows_the_json_headline(shared_traces, tmp_path, open_html):
    """Three kernel-zoo programs run on a TITAN (A) and a GTX 970 (B): headline = --json's (pairs evaluated, lowest
    pooled WMAPE, keeping A's times), equal to the pooled table; both figures draw."""
    zoo = shared_traces.parent / "kernel-zoo"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for name in ("vectorAdd-1048576.csv", "bitonic-32768.csv", "quicksort-4096.csv"):
        shutil.copy(zoo / "Titan" / name, a / name)
        shutil.copy(zoo / "GTX-970" / name, b / name)
    html, doc_path = tmp_path / "pairs.html", tmp_path / "pairs.json"
    assert main(["evaluate", str(a), str(b), "--models", "default-kernel,dram-ratio", "--json", str(doc_path),
                 "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert [(n["label"], n["value"]) for n in page.headline()] == [(n["label"], n["value"]) for n in doc["headline"]]
    pooled = {r["model"]: r["WMAPE"] for r in doc["pooled"] if r["category"] == "all"}
    best = min((m for m in pooled if m != "unchanged"), key=pooled.get)
    assert [n["value"] for n in doc["headline"]] == [3, pooled[best], pooled["unchanged"]]
    assert doc["headline"][1]["label"] == f"lowest pooled WMAPE of the kernel models: {best}"
