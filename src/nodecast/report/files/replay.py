"""A same-node replay as files: JSON (headline, then ``ReplayResult.summary``), CSV/Parquet (measured against
replayed, ``ReplayResult.table``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.replay import ReplayResult
from nodecast.report.files import document, table


@document.register(ReplayResult)
def replay_document(result: ReplayResult, **_: object) -> dict[str, Any]:
    """Headline numbers, end to end and GPU-busy measured and replayed (s, errors as fractions), GPU time,
    critical path, graph counts, calibrated parameters, notes."""
    return {"headline": [n.as_dict() for n in result.headline()], **result.summary()}


@table.register(ReplayResult)
def replay_table(result: ReplayResult, **_: object) -> pd.DataFrame:
    """End to end and per GPU busy and op time: measured, replayed (s), error (%)."""
    return result.table()
