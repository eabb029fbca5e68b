"""A self-contained HTML report: one file that opens offline in any browser.

Build a ``Page`` from components over plain data and write it::

    from nodecast.report import html as rh
    page = rh.Page("Forecast of run.sqlite on H100")
    page.headline = rh.headline([rh.Number("end-to-end on H100", 0.0123, "s", 0.0115, 0.0131)])
    page.inputs = rh.inputs(rh.RunInputs(trace="run.sqlite", version="0.1.0", command=["nodecast", "forecast"]))
    page.tables.append(rh.table(df, {"time_s": "s"}, title="Per kind"))
    page.figures.append(rh.timeline(measured_ops, forecast_ops))
    page.not_modelled = rh.not_modelled(kept_ops, ["copies overlap kernels as on the source"])
    rh.write_page(page, "report.html")

Sections always come in this order: answer, run inputs, tables, figures,
what was not modelled. docs/report.md explains the choices (Bokeh, the
timeline's packing and merging) with measured sizes and times.

``render(result, path, command=None, **options)`` writes the page of a
command's result: one submodule per result type (``html/forecast.py``)
registers it with ``@render.register(ResultType)``; submodules are imported
on the first call (``report._dispatch``). ``command`` is the command line
shown under the run's inputs (the CLI passes its own).
"""

from nodecast.report._dispatch import Dispatch
from nodecast.report.html.blocks import MachineInputs, Number, RunInputs, headline, inputs, not_modelled, table
from nodecast.report.html.charts import bandwidth_curves, bars, box_stats, critical_path, error_boxes, roofline, sweep
from nodecast.report.html.context import machine_inputs, run_inputs
from nodecast.report.html.page import Block, Figure, Page, build_page, check_html_path, write_page
from nodecast.report.html.timelines import gantt, timeline
from nodecast.report.html.units import UNITS, fmt

#: ``render(result, path, command=None, **options) -> Path``: the result's page, written to ``path`` (.html).
render = Dispatch(__name__, "render", "HTML page")

__all__ = [
    "UNITS", "Block", "Figure", "MachineInputs", "Number", "Page", "RunInputs", "bandwidth_curves", "bars",
    "box_stats", "build_page", "check_html_path", "critical_path", "error_boxes", "fmt", "gantt", "headline",
    "inputs", "machine_inputs", "not_modelled", "render", "roofline", "run_inputs", "sweep", "table", "timeline",
    "write_page",
]
