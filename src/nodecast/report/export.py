"""Write result tables in formats people open elsewhere (CSV, Parquet, JSON)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nodecast.fileio import atomic_path, check_suffix

TABLE_SUFFIXES = (".csv", ".parquet", ".json")


def check_table_path(path: str | Path) -> Path:
    """The output path, if its extension is a table format nodecast writes."""
    return check_suffix(path, TABLE_SUFFIXES, "a table")


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` atomically; the format follows the extension."""
    path = check_table_path(path)
    suffix = path.suffix.lower()
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            df.to_csv(tmp, index=False)
        elif suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_json(tmp, orient="records", indent=1)
    return path
