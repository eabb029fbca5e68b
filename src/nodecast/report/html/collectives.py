"""The page of ``nodecast collectives --html``: NCCL collectives per message size on one node or several.

Headline: per node, busbw at the largest size and the time of the smallest. Inputs: each node with the source of
its values, the command line. Tables: the sizes side by side (time, busbw, algorithm/protocol per node), then every
row (``CollectivesResult.table``). Figure: busbw against size, one line per node. Not modelled: the notes (how each
node's links were read, what NCCL's model leaves out).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nodecast.report import html as rh
from nodecast.report.terminal.collectives import side_by_side
from nodecast.workflows.collectives import CollectivesResult


def collectives_page(result: CollectivesResult, command: Sequence[str] | str | None = None) -> rh.Page:
    """The page of ``result`` (see the module docstring)."""
    page = rh.Page(f"{result.op.key} ({result.dtype.key}) on {', '.join(result.names)}")
    page.headline = rh.headline(result.headline(), note="nccl-tests' definitions: algbw = size / time, busbw = algbw "
                                "x 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 "
                                "otherwise. Times from NCCL's own cost model on each node's links.")
    page.inputs = rh.inputs(rh.run_inputs(f"{result.op.key}, {result.dtype.key}", command, result.machines,
                                          {"collective": "NCCL's tuning model (nodecast.models.collective_tuning)"}))
    wide = side_by_side(result).rename(columns=lambda c: c.replace("\n", " "))
    units = {c: "s" for c in wide.columns if c.endswith("time")}
    units.update({c: "B/s" for c in wide.columns if "GB/s" in c})
    units["size"] = "B"
    page.tables.append(rh.table(wide.rename(columns=lambda c: c.replace(" GB/s", "")), {
        k.replace(" GB/s", ""): v for k, v in units.items()}, title="Per message size, nodes side by side"))
    page.tables.append(rh.table(result.table, {"size_bytes": "B", "elements": "count", "gpus": "count",
                                               "time_s": "s", "algbw_bps": "B/s", "busbw_bps": "B/s"},
                                title="Every node and size"))
    curves = result.table.rename(columns={"size_bytes": "bytes", "busbw_bps": "bandwidth_bps"})
    curves["series"] = curves["machine"]
    page.figures.append(rh.bandwidth_curves(curves[["series", "bytes", "bandwidth_bps"]],
                                            title="busbw against message size", anchor="busbw"))
    page.not_modelled = rh.not_modelled(None, result.notes, none_kept="Every size is NCCL's model on the node's links.")
    return page


@rh.render.register(CollectivesResult)
def render_collectives(result: CollectivesResult, path: str | Path, command: Sequence[str] | str | None = None,
                       **_: object) -> Path:
    """Write the page of ``result`` to ``path`` (.html)."""
    return rh.write_page(collectives_page(result, command), path)
