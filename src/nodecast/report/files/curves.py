"""``nodecast curves --csv``: every point of the curves, one row per machine, class, model and size (SI units)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nodecast.fileio import atomic_path
from nodecast.models.curves import Curves
from nodecast.report.files import table


@table.register(Curves)
def _(curves: Curves) -> pd.DataFrame:
    return curves.table


def write_csv(curves: Curves, path: str | Path) -> Path:
    """The points as CSV, numbers to 9 significant digits (bytes and bytes/s; the same text run after run)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        curves.table.to_csv(tmp, index=False, float_format="%.9g")
    return path
