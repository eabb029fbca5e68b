"""``nodecast simulate --html`` (one run, a sweep, the reference comparison) opens offline in Chromium, draws every
figure, and shows the numbers ``--json`` writes: makespan and GFlop/s, or the agreement with StarPU+SimGrid.
Inputs: StarPU's calibration of attila and its reference predictions (../shared/data/starpu)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodecast.cli import main
from nodecast.report.html.units import fmt

STARPU = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "starpu"


@pytest.fixture
def starpu_args():
    if not STARPU.is_dir():
        pytest.skip(f"shared StarPU data not found at {STARPU}")
    return ["--starpu-dir", str(STARPU / "sampling"), "--starpu-machine", "attila"]


def _headline(page):
    return [(n["label"], n["value"], n["unit"], n["text"]) for n in page.headline()]


def _titles(page):
    return page.page.eval_on_selector_all(".figure h3", "els => els.map(e => e.textContent)")


def test_one_run_shows_makespan_and_gflops_of_the_json_and_its_schedule(tmp_path, starpu_args, open_html):
    """Cholesky 3840 on attila: the page's makespan and GFlop/s are the summary's (exact and as printed); the Gantt
    chart holds every task and copy; the inputs give the platform file's links; the notes are listed."""
    html, summary = tmp_path / "simulate-run.html", tmp_path / "run.json"
    assert main(["simulate", "cholesky", "--size", "3840", *starpu_args, "--json", str(summary), "--html", str(html)]) == 0
    doc = json.loads(summary.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert _headline(page) == [("makespan", doc["makespan_s"], "s", fmt(doc["makespan_s"], "s")),
                               ("performance (nominal)", doc["gflops"] * 1e9, "flop/s", fmt(doc["gflops"] * 1e9, "flop/s"))]
    assert _titles(page) == ["Schedule: tasks per worker, then copies per direction", "Busy and idle time per worker"]
    copies = sum(int(v["copies"]) for v in doc["transfers"].values())
    assert page.timeline_ops("nc-timeline-gantt") == [doc["n_tasks"] + copies]
    inputs = page.page.inner_text("#inputs")
    assert "attila.platform.v4.xml" in inputs and "link RAM-CUDA0 bandwidth" in inputs and "nodecast simulate" in inputs
    assert all(note in page.page.inner_text("#not-modelled") for note in doc["notes"])


def test_sweep_shows_the_best_run_of_the_json_rows(tmp_path, starpu_args, open_html):
    """A size x scheduler sweep: the headline is the row of --json with the highest GFlop/s (its GFlop/s and
    makespan); the table has every row; GFlop/s and makespan are drawn against size, one line per scheduler."""
    html, rows_path = tmp_path / "simulate-sweep.html", tmp_path / "sweep.json"
    assert main(["simulate", "cholesky", "--sizes", "1920:3840:960", "--scheduler", "dmda,eager", *starpu_args,
                 "--json", str(rows_path), "--html", str(html)]) == 0
    rows = json.loads(rows_path.read_text())
    best = max(rows, key=lambda r: r["gflops"])
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert [(v, u) for _, v, u, _ in _headline(page)] == [(best["gflops"] * 1e9, "flop/s"), (best["makespan_s"], "s")]
    assert _titles(page) == ["GFlop/s against matrix size", "Makespan against matrix size"]
    cells = page.page.eval_on_selector_all("section#tables tbody tr", "rs => rs.map(r => r.children[3].dataset.value)")
    assert [float(c) for c in cells] == [r["makespan_s"] for r in rows]
    plotted = page.page.evaluate("""() => {
        const m = Bokeh.documents[0].get_model_by_name('sweep-gflops:eager');
        const d = m.data instanceof Map ? Object.fromEntries(m.data) : m.data;
        return Array.from(d.y);
    }""")
    assert plotted == pytest.approx([r["gflops"] for r in rows if r["scheduler"] == "eager"])


def test_comparison_shows_the_agreement_of_the_json(tmp_path, starpu_args, open_html):
    """The reference comparison (10-block rows, dmda and eager): share within 3 %, median |difference| and rows
    compared are --json's headline; nodecast and the reference are drawn per scheduler, with the differences' boxes."""
    html, doc_path = tmp_path / "simulate-compare.html", tmp_path / "compare.json"
    ref = STARPU / "reference" / "attila.csv"
    assert main(["simulate", "--compare-reference", str(ref), "--max-blocks", "10", "--scheduler", "dmda,eager",
                 *starpu_args, "--json", str(doc_path), "--html", str(html)]) == 0
    doc = json.loads(doc_path.read_text())
    page = open_html(html)
    page.assert_clean()
    page.assert_figures_drawn()
    assert [(label, v, u) for label, v, u, _ in _headline(page)] == [
        (n["label"], n["value"], n["unit"]) for n in doc["headline"]]
    assert [t for _, _, _, t in _headline(page)] == [fmt(n["value"], n["unit"]) for n in doc["headline"]]
    assert _titles(page) == ["nodecast and StarPU+SimGrid per row", "Difference per scheduler"]  # one size: bars
    assert "attila.csv" in page.page.inner_text("#inputs")
