"""``nodecast collectives`` as files: JSON (headline, what was asked, one record per node and size, notes) and
CSV/Parquet (the same records: ``CollectivesResult.table``, SI units)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.report.files import document, table
from nodecast.workflows.collectives import CollectivesResult


@document.register(CollectivesResult)
def collectives_document(result: CollectivesResult, **_: object) -> dict[str, Any]:
    """Headline numbers, the collective, data type and nodes, then ``rows``: machine, op, dtype, gpus, size_bytes,
    elements, time_s, algbw_bps, busbw_bps, algorithm, protocol; then the notes."""
    return result.to_dict()


@table.register(CollectivesResult)
def collectives_table(result: CollectivesResult, **_: object) -> pd.DataFrame:
    """One row per node and size (``workflows.collectives.COLUMNS``)."""
    return result.table
