"""An evaluation as files: JSON (headline, then ``Evaluation.summary``), CSV/Parquet (the WMAPE table with each
model's type, what ``--table`` writes)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.evaluate import Evaluation
from nodecast.report.files import document, table


@document.register(Evaluation)
def evaluation_document(ev: Evaluation, **_: object) -> dict[str, Any]:
    """Headline numbers, the runs and machines, op counts, WMAPE per model and kind (%), kernel errors, unmatched
    ops, the whole run (s; errors as fractions) and the notes."""
    return {"headline": [n.as_dict() for n in ev.headline()], **ev.summary()}


@table.register(Evaluation)
def evaluation_table(ev: Evaluation, **_: object) -> pd.DataFrame:
    """WMAPE (%) per model (rows, with their type) and transfer kind (columns), MAPE and op count."""
    return ev.typed_table()
