"""A projection as files: JSON (headline, then ``Projection.to_dict``), CSV/Parquet (the per-category summary,
``Projection.summary``, what ``--summary`` writes)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.cost.project import Projection
from nodecast.report.files import document, table


@document.register(Projection)
def projection_document(proj: Projection, **_: object) -> dict[str, Any]:
    """Headline numbers, the trace and machines, the models, the per-category summary (s, bytes), the ops no model
    handles, the models that projected nothing (with why), and the notes."""
    return {"headline": [n.as_dict() for n in proj.headline()], **proj.to_dict()}


@table.register(Projection)
def projection_table(proj: Projection, **_: object) -> pd.DataFrame:
    """Per category, then the projected and not projected totals: ops, bytes, source time, time and ops per model."""
    return proj.summary()
