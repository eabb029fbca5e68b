"""One colour per category on every figure of a page: a category (``kernels``, ``copies: HtoD pinned``,
``host: API calls``...) is drawn in the same colour in the timelines, the critical path and the bars.

The categories nodecast writes (``nodecast.engine.metrics``: op kinds, transfer classes, critical-path edge
labels) have fixed colours, chosen so that related ones read as related (pinned and pageable copies of a
direction in two shades of one hue); any other name gets a colour of Bokeh's Category20 from a hash of the
name, the same on every page.
"""

from __future__ import annotations

import zlib

#: Bokeh's Category20.
CATEGORY20 = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5",
    "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
)

KNOWN = {
    "kernels": "#1f77b4",
    "memsets": "#17becf",
    "copies: HtoD pinned": "#ff7f0e",
    "copies: HtoD pageable": "#ffbb78",
    "copies: HtoD host memory unrecorded": "#e6550d",
    "copies: DtoH pinned": "#2ca02c",
    "copies: DtoH pageable": "#98df8a",
    "copies: DtoH host memory unrecorded": "#31a354",
    "copies: DtoD": "#8c564b",
    "copies: peer (GPU-GPU)": "#c49c94",
    "copies: HtoD managed (UM)": "#bcbd22",
    "copies: DtoH managed (UM)": "#dbdb8d",
    "copies: DtoD managed (UM)": "#9edae5",
    "copies: HtoH": "#7f7f7f",
    "copies: other copy": "#c7c7c7",
    "copies: not a transfer": "#636363",
    "host: API calls": "#d62728",
    "host: sync returns": "#9467bd",
    "host: gaps between calls": "#ff9896",
    "host: before the first call": "#c5b0d5",
    "launch latency": "#e377c2",
    "GPU dependency latency": "#f7b6d2",
    "recorded offsets (no API record)": "#6baed6",
}


def category_color(name: str) -> str:
    """The colour of category ``name`` (``#rrggbb``), the same wherever it is drawn."""
    known = KNOWN.get(name)
    if known is not None:
        return known
    return CATEGORY20[zlib.crc32(name.encode()) % len(CATEGORY20)]


def category_colors(names: list[str]) -> list[str]:
    """``category_color`` of each name, except that a name outside ``KNOWN`` whose hashed colour is already taken
    in ``names`` gets the next free one of Category20 (while any is free): one figure never draws two of its
    categories alike."""
    out = [KNOWN.get(n) for n in names]
    taken = {c for c in out if c is not None}
    for i, n in enumerate(names):
        if out[i] is not None:
            continue
        start = zlib.crc32(n.encode()) % len(CATEGORY20)
        color = CATEGORY20[start]
        for k in range(len(CATEGORY20)):
            candidate = CATEGORY20[(start + k) % len(CATEGORY20)]
            if candidate not in taken:
                color = candidate
                break
        out[i] = color
        taken.add(color)
    return out  # type: ignore[return-value]
