"""The page of a same-node replay (``nodecast replay --html``).

Headline: end to end measured and replayed, and the replay's error. Inputs:
the trace, the graph's counts and calibrated parameters, the command line.
Tables: measured against replayed; the replay's critical path. Figures: the
measured and replayed timelines, zoomable; the critical path by category.
Not modelled: the notes (what the graph assumed where the trace is silent).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from nodecast.engine import metrics
from nodecast.workflows.replay import ReplayResult
from nodecast.report import html as rh
from nodecast.report.html._graph import critical_path_frame, timeline_ops, trace_summary


def replay_page(result: ReplayResult, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``result`` (see the module docstring)."""
    g = result.graph
    page = rh.Page(f"Replay of {Path(g.source).name} on its own node")
    page.headline = rh.headline(result.headline(), note=f"End to end: from the {metrics.end_to_end_start(g)} to the "
                                "end of the last GPU op. The replay reads only op durations, host gaps between calls "
                                "and the first timestamp: its error is the dependency model's.", notes=result.notes)
    page.inputs = rh.inputs(rh.run_inputs(g.source, command, trace_summary=trace_summary(g)))
    page.tables.append(rh.table(result.table(), {"measured": "s", "replayed": "s", "error": "%"},
                                title="Same-node replay with measured durations"))
    cp = result.critical_path_table()
    if len(cp):
        page.tables.append(rh.table(cp, {"time": "s", "share": "share"},
                                    title="Critical path of the replay, by category (sums to the replayed end to end)"))
    counts = pd.DataFrame([{"what": k, "count": v} for k, v in g.counts().items()])
    if len(counts):
        page.tables.append(rh.table(counts, {"count": "count"}, title="The operation graph"))
    lat = g.params.get("launch_latency_s", {})
    if lat:
        page.tables.append(rh.table(pd.DataFrame({"op kind": list(lat), "launch latency": list(lat.values())}),
                                    {"launch latency": "s"}, title="Launch latency, calibrated from the trace",
                                    caption="From the end of the launching call to the start of the op."))
    page.figures.append(rh.timeline(timeline_ops(g, result.measured), timeline_ops(g, result.replayed),
                                    ("measured", "replayed"), title="Measured and replayed timelines"))
    breakdown = critical_path_frame({"replayed": result.critical_path_s})
    if not breakdown.empty:
        page.figures.append(rh.critical_path(breakdown))
    page.not_modelled = rh.not_modelled(None, result.notes, none_kept="Every op keeps its measured duration: a "
                                        "replay models the dependencies between ops, not their times.")
    return page


@rh.render.register(ReplayResult)
def render_replay(result: ReplayResult, path: str | Path, command: Sequence[str] | str | None = None,
                  **_: object) -> Path:
    """Write the page of ``result`` to ``path`` (.html)."""
    return rh.write_page(replay_page(result, command), path)
