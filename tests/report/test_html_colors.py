"""Tests for nodecast.report.html.colors: one colour per category across a page's figures."""

from __future__ import annotations

from nodecast.engine.metrics import _EDGE_LABELS
from nodecast.report.html.colors import KNOWN, category_color, category_colors
from nodecast.traces.kinds import TransferClass

#: What nodecast.engine.metrics labels ops and critical-path edges with.
CATEGORY_LABELS = ["kernels", "memsets", "host: API calls", "host: sync returns", "GPU dependency latency",
                   "host: before the first call", *[f"copies: {c.label}" for c in TransferClass],
                   *_EDGE_LABELS.values()]


def test_every_category_nodecast_writes_has_its_own_fixed_colour():
    """The op-kind, transfer-class and critical-path labels of nodecast.engine.metrics all have a fixed colour, and
    no two share one."""
    missing = [c for c in CATEGORY_LABELS if c not in KNOWN]
    assert not missing
    assert len(set(KNOWN.values())) == len(KNOWN)


def test_a_category_has_one_colour_whatever_else_the_figure_draws():
    """The timeline and the critical path give "kernels" the same colour though they draw other categories."""
    a = category_colors(["copies: DtoH pageable", "kernels", "host: API calls"])
    b = category_colors(["kernels", "host: gaps between calls", "launch latency"])
    assert a[1] == b[0] == category_color("kernels")


def test_other_names_never_share_a_colour_in_one_figure():
    """Names nodecast does not know (a Gantt's kernel names) get distinct colours in one figure, while Category20
    has any left."""
    names = [f"kernel_{i}" for i in range(20)]
    assert len(set(category_colors(names))) == 20
    assert category_colors(["potrf"]) == [category_color("potrf")]
