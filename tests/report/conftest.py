"""The HTML report tests' screenshots folder (printed at the end of the run) and their headless browser."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SCREENSHOTS = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def screenshots(request, tmp_path_factory) -> Path:
    """A folder for screenshots: $NODECAST_ARTEFACTS/html-report when set, else one under pytest's temporary folder."""
    base = os.environ.get("NODECAST_ARTEFACTS")
    folder = Path(base) / "html-report" if base else tmp_path_factory.getbasetemp() / "html-report-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    request.config.stash[SCREENSHOTS] = folder
    return folder


def pytest_terminal_summary(terminalreporter, config):
    folder = config.stash.get(SCREENSHOTS, None)
    if folder is not None:
        shots = sorted(p.name for p in folder.glob("*.png"))
        terminalreporter.write_line(f"HTML report screenshots ({len(shots)}): {folder}")


# -- a headless Chromium for the report pages (the harness of test_html_browser.py, shared) ----------------------

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
WIDTH = 1280


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium with an empty profile and no network; skips when Chromium or Playwright is absent."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"{CHROMIUM} is absent (Debian's chromium package; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is absent "
                                   "(pip install '.[test]')")
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, offline=True,
                                                   args=FLAGS, viewport={"width": WIDTH, "height": 900})
        yield ctx
        ctx.close()


@dataclass
class OpenPage:
    """A report page open in the browser, with what it logged and requested."""

    page: Any
    url: str
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        """No error or warning logged, nothing thrown, no request but the page's own file."""
        bad = [(t, text) for t, text in self.console if t in ("error", "warning")]
        assert bad == [], bad
        assert self.errors == []
        assert [u for u in self.requests if u != self.url] == []

    def assert_figures_drawn(self) -> None:
        """Every figure on the page has ink: at least 1 % of its pixels are not the white background."""
        from PIL import Image

        figures = self.page.locator(".figure")
        assert figures.count() > 0
        for i in range(figures.count()):
            png = Image.open(io.BytesIO(figures.nth(i).screenshot())).convert("L")
            ink = np.asarray(png) < 230
            title = figures.nth(i).locator("h3").inner_text()
            assert ink.mean() > 0.01, f"figure {i + 1} ({title}) looks empty ({100 * ink.mean():.2f} % ink)"

    def headline(self) -> list[dict[str, Any]]:
        """The page's headline numbers: label, value, low and high (exact, from ``data-value``; None when absent),
        unit, and the value as the page prints it."""
        return self.page.eval_on_selector_all(".number", """els => els.map(e => {
            const num = (sel) => { const x = e.querySelector(sel); return x ? parseFloat(x.dataset.value) : null; };
            return {label: e.dataset.label, unit: e.dataset.unit, value: num('.value'), low: num('.low'),
                    high: num('.high'), text: e.querySelector('.value').textContent};
        })""")

    def timeline_ops(self, tid: str) -> list[int]:
        """Per panel of timeline ``tid``: how many ops it holds."""
        return self.page.evaluate("id => window.ncTimelines[id].panels.map(p => p.n)", tid)

    def data(self, name: str) -> dict[str, list]:
        """The columns of the Bokeh ColumnDataSource called ``name``, as the page holds them."""
        return self.page.evaluate(_DATA_JS, name)

    def timeline(self, tid: str) -> list[dict]:
        """Per panel of timeline ``tid``: the bars drawn (track, left, right, ops, kind) and the view they are for."""
        return self.page.evaluate(_TIMELINE_JS, tid)


_DATA_JS = """name => {
  const m = Bokeh.documents[0].get_model_by_name(name);
  const entries = m.data instanceof Map ? Array.from(m.data.entries()) : Object.entries(m.data);
  const out = {};
  for (const [k, v] of entries) out[k] = Array.from(v);
  return out;
}"""
_TIMELINE_JS = """id => {
  const tl = window.ncTimelines[id];
  return tl.sources.map((s, j) => {
    const d = s.data instanceof Map ? Object.fromEntries(s.data) : s.data;
    return {y: Array.from(d.y), left: Array.from(d.left), right: Array.from(d.right), ops: Array.from(d.ops),
            kind: Array.from(d.kind), view: tl.panels[j].view, n: tl.panels[j].n, draws: tl.draws};
  });
}"""


@pytest.fixture
def open_html(browser, screenshots):
    """``open_html(path)``: open a report file from disk, wait until every figure and timeline is drawn, keep a
    screenshot of the whole page under ``screenshots`` (named after the file), return an ``OpenPage``."""

    def open_(path: Path) -> OpenPage:
        for old in browser.pages:  # one report open at a time
            old.close()
        page = browser.new_page()
        loaded = OpenPage(page, Path(path).resolve().as_uri())
        page.on("console", lambda m: loaded.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: loaded.errors.append(str(e)))
        page.on("request", lambda r: loaded.requests.append(r.url))
        page.goto(loaded.url)
        page.wait_for_function("""() => {
            if (document.querySelectorAll('.figure').length === 0) return document.readyState === 'complete';
            if (!window.Bokeh || Bokeh.documents.length === 0 || !Bokeh.documents[0].is_idle) return false;
            const timelines = Object.values(window.ncTimelines || {});
            return timelines.length === document.querySelectorAll('.timeline-status').length
                   && timelines.every(t => (t.draws || 0) >= 1);
        }""", timeout=60_000)
        height = page.evaluate("document.documentElement.scrollHeight")
        page.set_viewport_size({"width": WIDTH, "height": min(height, 16_000)})  # the whole page, without scrolling
        page.wait_for_timeout(300)
        page.screenshot(path=str(screenshots / Path(path).with_suffix(".png").name))
        return loaded

    return open_
