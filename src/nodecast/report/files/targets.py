"""A forecast on several targets as files: JSON (headline, the run on A, one record per target, notes per
target), CSV/Parquet (the comparison table, ``Comparison.table``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.targets import Comparison
from nodecast.notes import records
from nodecast.report.files import document, table


@document.register(Comparison)
def comparison_document(comp: Comparison, **_: object) -> dict[str, Any]:
    """Headline numbers, then the trace, the source node, its measured and replayed end to end (s), the unchanged
    case's record (every op at its time on A), one record per target (``Comparison.table`` columns), what each
    target kept of A and changed (``cost.change``) and the notes per target (records with their severity,
    decisive first)."""
    return {"headline": [n.as_dict() for n in comp.headline()], "trace": comp.trace, "source": comp.source,
            "measured_end_to_end_s": comp.measured_end_to_end_s, "replayed_end_to_end_s": comp.replayed_end_to_end_s,
            "unchanged": comp.unchanged or None, "targets": comp.table(),
            "changes": {label: change.to_dict() for label, change in comp.changes.items()},
            "notes": {label: records(notes) for label, notes in comp.notes.items()}}


@table.register(Comparison)
def comparison_table(comp: Comparison, **_: object) -> pd.DataFrame:
    """The unchanged case (every op at its time on A), then one row per target: end to end with its interval,
    A / B, GPU busy, GPU time, critical-path split, kept ops."""
    return comp.table_with_unchanged()
