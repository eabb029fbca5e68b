"""``nodecast kernels``'s files: ``--json`` (headline, per-kernel table, notes, errors against the target) and ``-o``.

``document`` holds the headline numbers first (the ones the HTML page
shows), then the per-kernel table with its total row, the models' notes
and, with a target run, each model's MAPE and WMAPE. ``table`` is the
per-launch table ``-o`` writes (every intermediate quantity of the roofline,
SI units).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from nodecast.workflows.kernels import KernelsResult
from nodecast.report.files import document, table


@document.register(KernelsResult)
def _(result: KernelsResult, per_launch: bool = False) -> dict[str, Any]:
    rows = result.table(per_launch)
    doc: dict[str, Any] = {
        "headline": [n.as_dict() for n in result.headline()],
        "source": result.source.name,
        "target": result.target.name,
        "files": result.files,
        "models": result.models,
        "launches": len(result.launches),
        "kernels": result.kernel_count(),
        "per_launch" if per_launch else "per_kernel": rows[rows["kernel"] != "total"],
        "total": rows[rows["kernel"] == "total"].iloc[0].to_dict(),
        "numbered": result.numbered(),
        "notes": result.notes(),
    }
    t = result.against_target
    if t is not None:
        doc["against_target"] = {"paired": t.paired, "unmatched_source": t.unmatched_source,
                                 "unmatched_target": t.unmatched_target, "measured_s": t.measured_s, "models": t.table}
    return doc


@table.register(KernelsResult)
def _(result: KernelsResult) -> pd.DataFrame:
    return result.launches
