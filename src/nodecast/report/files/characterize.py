"""A trace's characterization as files: JSON (headline, then ``Characterization.to_dict``), CSV/Parquet (the
transfers per kind, ``Characterization.per_class``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.characterize import Characterization
from nodecast.report.files import document, table


@document.register(Characterization)
def characterization_document(ch: Characterization, **_: object) -> dict[str, Any]:
    """Headline numbers, AHEAD Table I's row, counts, memset time, the transfers per kind, both distributions."""
    return {"headline": [n.as_dict() for n in ch.headline()], **ch.to_dict()}


@table.register(Characterization)
def characterization_table(ch: Characterization, **_: object) -> pd.DataFrame:
    """One row per transfer kind: count, bytes, GPU time, shares of time and count, effective bandwidth."""
    return ch.per_class
