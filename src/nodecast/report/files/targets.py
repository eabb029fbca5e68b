"""A forecast on several targets as files: JSON (headline, the run on A, one record per target, notes per
target), CSV/Parquet (the comparison table, ``Comparison.table``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.graph.targets import Comparison
from nodecast.notes import records
from nodecast.report.files import document, table


@document.register(Comparison)
def comparison_document(comp: Comparison, **_: object) -> dict[str, Any]:
    """Headline numbers, then the trace, the source node, its measured and replayed end to end (s), one record per
    target (``Comparison.table`` columns) and the notes per target (records with their severity, decisive first)."""
    return {"headline": [n.as_dict() for n in comp.headline()], "trace": comp.trace, "source": comp.source,
            "measured_end_to_end_s": comp.measured_end_to_end_s, "replayed_end_to_end_s": comp.replayed_end_to_end_s,
            "targets": comp.table(), "notes": {label: records(notes) for label, notes in comp.notes.items()}}


@table.register(Comparison)
def comparison_table(comp: Comparison, **_: object) -> pd.DataFrame:
    """One row per target: end to end with its interval, A / B, GPU busy, GPU time, critical-path split, kept ops."""
    return comp.table()
