"""Figures of every command's result as PNG, SVG or PDF (matplotlib): ``draw(result, path, **options)``.

One submodule per result type registers its figure with
``@draw.register(ResultType)`` (``figures/evaluate.py`` draws an
``Evaluation``'s error boxes); submodules are imported on the first call
(``report._dispatch``). The format follows the extension; every figure is
written through a temporary file and renamed into place (``save``).

matplotlib is the ``figures`` extra (``nodecast.extras``): it is imported on
the first figure drawn, not with this package, so that a command that only
checks a path (``check_figure_path``, which says when the extra is missing)
or draws nothing does not pay its half second of imports.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from nodecast import extras
from nodecast.fileio import atomic_path, check_suffix
from nodecast.paths import as_text
from nodecast.report._dispatch import Dispatch

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def require_matplotlib(path: str | Path | None = None) -> None:
    """The one-line InputError naming the ``figures`` extra when matplotlib is not installed (``path``: the figure)."""
    extras.require("matplotlib", "drawing a figure", path=None if path is None else str(path))


_PYPLOT: list[ModuleType] = []


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display), imported on first use."""
    if _PYPLOT:
        return _PYPLOT[0]
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")  # once, as an import of this package did: a backend chosen later is the caller's
    import matplotlib.pyplot as plt

    _PYPLOT.append(plt)
    return plt


def __getattr__(name: str) -> Any:
    # ``from nodecast.report.figures import plt`` in the figure modules: pyplot, imported then (PEP 562).
    if name == "plt":
        return pyplot()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Draw(Dispatch):
    def load(self) -> None:
        require_matplotlib()  # before the figure modules import matplotlib: one line naming the extra
        super().load()


#: ``draw(result, path, **options) -> Path``: the result's figure, written to ``path`` (.png, .svg or .pdf).
draw = _Draw(__name__, "draw", "figure")


def check_figure_path(path: str | Path) -> Path:
    """The output path, if its extension is a figure format nodecast writes and matplotlib is installed."""
    path = check_suffix(path, FIGURE_SUFFIXES, "a figure")
    require_matplotlib(path)
    return path


def save(fig: Any, path: str | Path) -> Path:
    """Save ``fig`` (a matplotlib Figure) atomically and close it."""
    from matplotlib.text import Text

    plt = pyplot()
    path = check_figure_path(path)
    for text in fig.findobj(Text):  # a non-UTF-8 file name in a title: its bytes as \xff (no font draws a surrogate)
        text.set_text(as_text(text.get_text()))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


__all__ = ["FIGURE_SUFFIXES", "check_figure_path", "draw", "plt", "pyplot", "require_matplotlib", "save"]
