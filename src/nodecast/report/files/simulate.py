"""``nodecast simulate``'s files: a run's JSON summary, a sweep's or comparison's rows as CSV and JSON.

The simulator's files keep the layout they have always had, so that files
written before and after compare byte for byte: a run's summary and a
sweep's rows are JSON indented by two spaces with sorted keys
(``write_json``), rows are CSV with a header (``write_csv``). The reference
comparison's JSON (new) is a ``report.files`` document: ``headline`` first,
then the rows. All of them are strict JSON (``strict_json``): a number
that is not finite (the GFlop/s of a run whose makespan is 0) is ``null``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

from nodecast.fileio import atomic_path
from nodecast.report.files import document, table
from nodecast.report.files import write_json as write_document
from nodecast.runtime.outputs import SimResult
from nodecast.workflows.simulate_reference import ReferenceComparison
from nodecast.workflows.simulate_sweep import SweepResult
from nodecast.strict_json import dumps


@document.register(SimResult)
def _(result: SimResult) -> dict[str, Any]:
    """The run's summary (``SimResult.summary``): every field but the trace, with GFlop/s, evictions and purges."""
    return result.summary()


@document.register(SweepResult)
def _(result: SweepResult) -> dict[str, Any]:
    return {"headline": [n.as_dict() for n in result.headline()], "platform": result.platform, "app": result.app,
            "precision": result.precision, "block_size": result.block_size, "workers": result.workers,
            "rows": result.rows}


@document.register(ReferenceComparison)
def _(result: ReferenceComparison) -> dict[str, Any]:
    ran = result.ran
    return {
        "headline": [n.as_dict() for n in result.headline()],
        "reference": str(result.path),
        "machines": result.machines,
        "rows_within_3_pct": result.within(),
        "rows_simulated": len(ran),
        "memory_flag_agrees": result.memory_flag_agrees(),
        "failed": len(result.records) - len(ran),
        "skipped": result.skipped,
        "simulated_s": result.simulated_s(),
        "wall_s": result.wall_s,
        "rows": result.records,
    }


@table.register(SimResult)
def _(result: SimResult) -> pd.DataFrame:
    return result.workers_table()


@table.register(SweepResult)
def _(result: SweepResult) -> pd.DataFrame:
    return result.table()


@table.register(ReferenceComparison)
def _(result: ReferenceComparison) -> pd.DataFrame:
    return result.table()


def _dumps_sorted(value: Any) -> str:
    """Two-space indent, sorted keys (the layout these files have always had); a non-finite number is null."""
    return dumps(value, indent=2, sort_keys=True) + "\n"


def write_json(result: SimResult | SweepResult | ReferenceComparison, path: str | Path) -> Path:
    """``--json``: a run's summary or a sweep's rows (two-space indent, sorted keys), or the comparison's document."""
    path = Path(path)
    if isinstance(result, ReferenceComparison):
        return write_document(document(result), path)
    value = result.summary() if isinstance(result, SimResult) else result.rows
    with atomic_path(path) as tmp:
        tmp.write_text(_dumps_sorted(value), encoding="utf-8")
    return path


def write_csv(result: SweepResult | ReferenceComparison, path: str | Path) -> Path:
    """``--csv``: one row per run (sweep) or per reference row (comparison), every field, header first."""
    rows = result.rows if isinstance(result, SweepResult) else result.records
    path = Path(path)
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path
