"""A result as files other tools open: JSON (headline numbers and tables), CSV or Parquet (its main table).

``write(result, path, **options)`` chooses by the extension: ``.json`` writes
``document(result)`` (a dict: ``headline``, a list of ``nodecast.headline.Number``
as dicts, first; then the result's values and tables as records), ``.csv``
and ``.parquet`` write ``table(result)`` (one DataFrame: the table a command's
``--table`` option has always written). ``dumps`` gives the JSON text that
``--json`` without a file prints. Both ``document`` and ``table`` are
implemented per result type by a submodule (``files/forecast.py``), imported
on the first call (``report._dispatch``). Every file is written through
``fileio.atomic_path``. JSON is strict JSON, which browsers and Node parse:
a number that is not finite (NaN, infinity) is written ``null``, in
documents (``strict_json.dumps``) as in JSON tables (pandas' ``to_json``
writes them null too); docs/report.md says what null means per field.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from nodecast.fileio import atomic_path, check_suffix
from nodecast.report._dispatch import Dispatch
from nodecast.strict_json import dumps as strict_dumps
from nodecast.strict_json import finite

TABLE_SUFFIXES = (".csv", ".parquet", ".json")
JSON_SUFFIXES = (".json",)

#: ``document(result, **options) -> dict``: the result's headline numbers, values and tables, JSON-ready.
document = Dispatch(__name__, "document", "JSON document")
#: ``table(result, **options) -> DataFrame``: the result's main table (what CSV and Parquet files hold).
table = Dispatch(__name__, "table", "main table")


def check_table_path(path: str | Path) -> Path:
    """The output path, if its extension is a table format nodecast writes."""
    return check_suffix(path, TABLE_SUFFIXES, "a table")


def check_json_path(path: str | Path) -> Path:
    """The ``--json`` path, if it ends in .json."""
    return check_suffix(path, JSON_SUFFIXES, "a JSON file")


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` atomically; the format follows the extension (JSON: one object per row)."""
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


def jsonable(value: Any) -> Any:
    """``value`` as plain Python for ``json``: DataFrames (as records), dataclasses with ``as_dict``, mapping keys
    as text, numpy scalars and arrays as numbers and lists; NaN, infinities and pandas NA/NaT as None
    (``strict_json.finite``: JSON has no such numbers, and null is what other tools read)."""
    if isinstance(value, pd.DataFrame):
        return [jsonable(row) for row in value.to_dict(orient="records")]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "as_dict"):
        return jsonable(value.as_dict())
    if hasattr(value, "tolist"):  # numpy scalar or array
        return jsonable(value.tolist())
    return finite(value)


def dumps(doc: Mapping[str, Any]) -> str:
    """The JSON text of a document (indented by one space, as nodecast has always printed it); strict JSON: a
    number that is not finite is null (``strict_json``)."""
    return strict_dumps(jsonable(doc), indent=1)


def write_json(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write a document as JSON, atomically."""
    path = check_json_path(path)
    text = dumps(doc)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")
    return path


def write(result: Any, path: str | Path, **options: Any) -> Path:
    """Write ``result``: .json -> ``document``, .csv/.parquet -> ``table`` (see the module docstring)."""
    path = check_table_path(path)
    if path.suffix.lower() == ".json":
        return write_json(document(result, **options), path)
    return write_table(table(result, **options), path)


__all__ = ["JSON_SUFFIXES", "TABLE_SUFFIXES", "check_json_path", "check_table_path", "document", "dumps", "jsonable",
           "table", "write", "write_json", "write_table"]
