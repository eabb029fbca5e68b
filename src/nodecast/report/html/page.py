"""Assemble a self-contained HTML report: one file, no network fetches.

A page has five sections in a fixed order: the headline answer, the run's
inputs, tables, figures, and what was not modelled. Components
(``blocks``, ``charts``, ``timeline``) return ``Block`` (ready HTML) or
``Figure`` (a Bokeh layout with its title and caption); ``build_page`` puts
them in order, embeds every Bokeh model through one ``bokeh.embed.components``
call, inlines BokehJS (``bokeh.min.js`` only: no widget, table, WebGL or
MathJax bundle) and the page's own small scripts, and returns the text.
``write_page`` writes it atomically.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodecast.fileio import atomic_path, check_suffix
from nodecast.paths import as_text
from nodecast.report.html.units import FORMAT_JS

HTML_SUFFIXES = (".html", ".htm")


@dataclass(frozen=True)
class Block:
    """A piece of the page that is plain HTML (a headline, a table, a list)."""

    html: str
    title: str = ""


@dataclass(frozen=True)
class Figure:
    """An interactive figure: a Bokeh layout with a title and a caption (HTML after it).

    ``scripts`` are page-level JavaScript sources the figure's callbacks call
    (included once per page, before BokehJS embeds the figures); ``on_ready``
    are Bokeh ``CustomJS`` callbacks run once the figures are drawn.
    """

    title: str
    model: Any  # bokeh.models.LayoutDOM; Any keeps Bokeh out of the import of this module
    caption: str = ""
    header: str = ""  # HTML between the title and the figure (a legend)
    scripts: tuple[str, ...] = ()
    on_ready: tuple[Any, ...] = ()  # bokeh CustomJS callbacks run once the document is drawn
    anchor: str = ""


@dataclass
class Page:
    """The sections of one report, each a list of components, in the order they are shown."""

    title: str
    headline: Block | None = None
    inputs: Block | None = None
    tables: list[Block] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    not_modelled: Block | None = None


_CSS = """
:root { --ink: #1d2330; --muted: #5b6474; --line: #d8dde6; --accent: #1f5fa8; --bg: #ffffff; --band: #f4f6f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); background: var(--bg); }
main { max-width: 1400px; margin: 0 auto; padding: 20px 28px 60px; }
h1 { font-size: 24px; margin: 4px 0 14px; }
h2 { font-size: 19px; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p.caption, .muted { color: var(--muted); font-size: 13px; margin: 4px 0 10px; }
code, pre { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre { background: var(--band); padding: 8px 10px; border-radius: 4px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
.headline { display: flex; flex-wrap: wrap; gap: 14px; }
.number { flex: 1 1 220px; max-width: 380px; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; background: var(--band); }
.number .label { color: var(--muted); font-size: 13px; }
.number .value { font-size: 34px; font-weight: 650; letter-spacing: -0.5px; color: var(--accent); white-space: nowrap; }
.number .interval { font-size: 14px; }
.number .note { color: var(--muted); font-size: 12px; margin-top: 4px; }
p.change { margin: 12px 0 0; padding: 6px 12px; border-left: 4px solid var(--accent); background: var(--band); font-size: 14px; }
table.data { border-collapse: collapse; margin: 6px 0 4px; font-size: 13.5px; }
table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 4px 10px; vertical-align: top; }
table.data th { text-align: left; background: var(--band); position: sticky; top: 0; }
table.data td.num, table.data th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.data th.sortable { cursor: pointer; user-select: none; }
table.data th.sortable::after { content: " \\2195"; color: #a0a8b6; font-size: 11px; }
table.data th[aria-sort="ascending"]::after { content: " \\25B2"; color: var(--accent); }
table.data th[aria-sort="descending"]::after { content: " \\25BC"; color: var(--accent); }
.scroll { max-height: 560px; overflow: auto; display: inline-block; max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
dl.inputs { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 6px 0; }
dl.inputs dt { color: var(--muted); }
dl.inputs dd { margin: 0; }
.figure { margin: 10px 0 26px; }
.legend { font-size: 13px; margin: 2px 0 4px; }
.legend .key { margin-right: 16px; white-space: nowrap; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
.timeline-status { font-size: 12.5px; color: var(--muted); margin: 2px 0 0; }
ul.assumptions li { margin: 3px 0; }
.decisive-notes { margin: 12px 0 0; padding: 8px 14px; border-left: 4px solid #c77700; background: #fff8ec; font-size: 14px; }
.decisive-notes p { margin: 0 0 4px; color: var(--muted); font-size: 13px; }
.decisive-notes ul { margin: 0; padding-left: 20px; }
"""

#: Sort a table by the header clicked: numbers by their ``data-value`` (NaN last), text by its words.
_SORT_JS = r"""
function ncSortTable(th) {
  const table = th.closest("table"), body = table.tBodies[0];
  const col = Array.prototype.indexOf.call(th.parentNode.children, th);
  const asc = th.getAttribute("aria-sort") !== "ascending";
  for (const other of th.parentNode.children) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  const numeric = th.classList.contains("num");
  const key = (row) => {
    const cell = row.children[col];
    if (!numeric) return cell.textContent;
    const v = parseFloat(cell.getAttribute("data-value"));
    return isNaN(v) ? null : v;
  };
  const rows = Array.from(body.rows).map((r, i) => [key(r), i, r]);
  rows.sort((a, b) => {
    if (a[0] === null || b[0] === null) return (a[0] === null) - (b[0] === null) || a[1] - b[1];
    const c = numeric ? a[0] - b[0] : a[0].localeCompare(b[0], "en", {numeric: true});
    return (asc ? c : -c) || a[1] - b[1];
  });
  for (const r of rows) body.appendChild(r[2]);
}
document.addEventListener("click", (ev) => {
  const th = ev.target.closest("th.sortable");
  if (th) ncSortTable(th);
});
document.addEventListener("keydown", (ev) => {
  const th = ev.target.closest && ev.target.closest("th.sortable");
  if (th && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); ncSortTable(th); }
});
"""


def check_html_path(path: str | Path) -> Path:
    """The output path, if it ends in .html or .htm."""
    return check_suffix(path, HTML_SUFFIXES, "an HTML report")


def _script(source: str) -> str:
    # "</script" inside inlined code would end the element early; JSON and JS both accept "<\/".
    return "<script>" + source.replace("</script", "<\\/script") + "</script>"


def _bokeh(figures: Sequence[Figure]) -> tuple[str, str, list[str]]:
    """(BokehJS, the embedding script, one div per figure), all models in one document."""
    if not figures:
        return "", "", []
    from bokeh.document import Document
    from bokeh.embed import components
    from bokeh.resources import Resources

    doc = Document()
    for f in figures:
        doc.add_root(f.model)
    for f in figures:
        for cb in f.on_ready:
            doc.js_on_event("document_ready", cb)
    script, divs = components([f.model for f in figures])
    bokeh_js = Resources(mode="inline", components=["bokeh"]).render_js()
    return bokeh_js, script, list(divs)


def _section(heading: str, anchor: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{html.escape(heading)}</h2>\n{body}\n</section>'


def build_page(page: Page) -> str:
    """The whole report as one HTML document (UTF-8 text), sections in their fixed order."""
    anchors = [f.anchor for f in page.figures if f.anchor]
    twice = sorted({a for a in anchors if anchors.count(a) > 1})
    if twice:
        raise ValueError(f"figures share the anchor {', '.join(twice)}: give each figure its own (anchor=...)")
    bokeh_js, embed_script, divs = _bokeh(page.figures)
    scripts: list[str] = [FORMAT_JS, _SORT_JS]
    for f in page.figures:
        scripts.extend(s for s in f.scripts if s not in scripts)
    parts = [f"<h1>{html.escape(page.title)}</h1>"]
    if page.headline is not None:
        parts.append(_section(page.headline.title or "Answer", "answer", page.headline.html))
    if page.inputs is not None:
        parts.append(_section(page.inputs.title or "Run inputs", "inputs", page.inputs.html))
    if page.tables:
        body = "\n".join(
            (f"<h3>{html.escape(t.title)}</h3>\n" if t.title else "") + t.html for t in page.tables
        )
        parts.append(_section("Tables", "tables", body))
    if page.figures:
        body = []
        for i, (f, div) in enumerate(zip(page.figures, divs, strict=True)):
            anchor = html.escape(f.anchor or f"figure-{i + 1}")
            body.append(
                f'<div class="figure" id="{anchor}"><h3>{html.escape(f.title)}</h3>\n{f.header}{div}\n{f.caption}</div>'
            )
        parts.append(_section("Figures", "figures", "\n".join(body)))
    if page.not_modelled is not None:
        parts.append(_section(page.not_modelled.title or "What was not modelled", "not-modelled",
                              page.not_modelled.html))
    head = "\n".join([
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No fetch can leave the page: scripts, styles and images are inline (data: and blob: URLs only).
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; "
        'font-src data:; connect-src data: blob:">',
        f"<title>{html.escape(page.title)}</title>",
        f"<style>{_CSS}</style>",
        _script("\n".join(scripts)),
        bokeh_js,
    ])
    return f'<!DOCTYPE html>\n<html lang="en">\n<head>\n{head}\n</head>\n<body>\n<main>\n' + \
        "\n".join(parts) + f"\n</main>\n{embed_script}\n</body>\n</html>\n"


def write_page(page: Page, path: str | Path) -> Path:
    """Write ``page`` to ``path`` (.html or .htm) through a temporary file; returns the path."""
    path = check_html_path(path)
    # A non-UTF-8 file name (trace, folder, command line) is in the page as lone surrogates, which UTF-8 cannot
    # encode: they are shown as the bytes they stand for. Only text can hold them: the figures' JSON is ASCII.
    text = as_text(build_page(page))
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path

