"""A one-target forecast's chart: the comparison chart of ``figures/targets.py`` with that one target."""

from __future__ import annotations

from pathlib import Path

from nodecast.workflows.forecast import ForecastResult
from nodecast.workflows.targets import comparison_of
from nodecast.report.figures import draw


@draw.register(ForecastResult)
def forecast_chart(result: ForecastResult, path: str | Path, *, label: str | None = None, **_: object) -> Path:
    """End to end on A (replayed, measured) and on B split into the critical path's parts; ``label``: the
    target's name in the chart (default: its machine's name)."""
    return draw(comparison_of([(label or result.target.name, result)]), path)
