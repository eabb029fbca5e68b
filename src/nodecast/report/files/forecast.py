"""A one-target forecast as files: JSON (headline, then ``ForecastResult.summary``), CSV/Parquet (GPU time per
category, ``ForecastResult.categories``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.forecast import ForecastResult
from nodecast.report.files import document, table


@document.register(ForecastResult)
def forecast_document(result: ForecastResult, *, top: int = 10, **_: object) -> dict[str, Any]:
    """Headline numbers, end to end and GPU-busy on A and B, categories, critical paths, the ``top`` movers,
    models, kept ops, model chains and notes (seconds)."""
    return {"headline": [n.as_dict() for n in result.headline()], **result.summary(top)}


@table.register(ForecastResult)
def forecast_table(result: ForecastResult, **_: object) -> pd.DataFrame:
    """GPU time per category on A and B (with the interval) and the models that gave it."""
    return result.categories()
