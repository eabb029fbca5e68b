"""Many evaluations (two folders of traces) as files: JSON (headline, then ``PairsEvaluation.to_dict``),
CSV/Parquet (the long error table: one row per pair, model and category, what ``--table`` writes)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.evaluate_kernels import PairsEvaluation
from nodecast.report.files import document, table


@document.register(PairsEvaluation)
def pairs_document(result: PairsEvaluation, **_: object) -> dict[str, Any]:
    """Headline numbers, the folders, the pairs and their machines, WMAPE per pair and model, pooled errors, the
    long error table, the pairs not evaluated and the files without a partner."""
    return {"headline": [n.as_dict() for n in result.headline()], **result.to_dict()}


@table.register(PairsEvaluation)
def pairs_table(result: PairsEvaluation, **_: object) -> pd.DataFrame:
    """One row per evaluated pair, model and category: ops, error sums for pooling, WMAPE and MAPE (%)."""
    return result.errors()
