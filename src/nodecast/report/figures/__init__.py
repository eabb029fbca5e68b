"""Figures of every command's result as PNG, SVG or PDF (matplotlib): ``draw(result, path, **options)``.

One submodule per result type registers its figure with
``@draw.register(ResultType)`` (``figures/evaluate.py`` draws an
``Evaluation``'s error boxes); submodules are imported on the first call
(``report._dispatch``). The format follows the extension; every figure is
written through a temporary file and renamed into place (``save``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from nodecast.fileio import atomic_path, check_suffix  # noqa: E402
from nodecast.paths import as_text  # noqa: E402
from nodecast.report._dispatch import Dispatch  # noqa: E402

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")

#: ``draw(result, path, **options) -> Path``: the result's figure, written to ``path`` (.png, .svg or .pdf).
draw = Dispatch(__name__, "draw", "figure")


def check_figure_path(path: str | Path) -> Path:
    """The output path, if its extension is a figure format nodecast writes."""
    return check_suffix(path, FIGURE_SUFFIXES, "a figure")


def save(fig: plt.Figure, path: str | Path) -> Path:
    """Save ``fig`` atomically and close it."""
    path = check_figure_path(path)
    for text in fig.findobj(Text):  # a non-UTF-8 file name in a title: its bytes as \xff (no font draws a surrogate)
        text.set_text(as_text(text.get_text()))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


__all__ = ["FIGURE_SUFFIXES", "check_figure_path", "draw", "plt", "save"]
