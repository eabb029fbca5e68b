"""Terminal output of every command's result: ``render(result, console=None, **options)``.

One submodule per result type (``terminal/forecast.py`` renders a
``ForecastResult``) registers its implementation with
``@render.register(ResultType)``; submodules are imported on the first call
(``report._dispatch``). Implementations print rich tables through
``report.tables.render`` and notes as plain lines, every name read from input
shown as text (``report.tables.plain``, ``nodecast.text.shown``: no markup,
no escape sequence, long names cut); ``console`` defaults to
``report.tables.console()`` (160 columns when piped). Options are keyword
arguments the command passes on (``top=10``).
"""

from __future__ import annotations

from nodecast.report._dispatch import Dispatch
from nodecast.report.tables import console

#: ``render(result, console=None, **options) -> None``: print ``result`` for a person at a terminal.
render = Dispatch(__name__, "render", "terminal renderer")

__all__ = ["console", "render", "said", "wrote"]


def wrote(*paths: object, stream: object = None) -> None:
    """Say on stderr (or ``stream``) which files were written: ``wrote a.json`` (several: ``wrote a.json, b.png``)."""
    import sys

    from nodecast.text import shown

    if paths:
        print(f"wrote {', '.join(shown(p) for p in paths)}", file=stream or sys.stderr)  # type: ignore[call-overload]


def said(message: str, stream: object = None) -> None:
    """One line for the person running the command, on stderr (or ``stream``): what was not done and why."""
    import sys

    from nodecast.text import LINE_LIMIT, shown

    print(shown(message, LINE_LIMIT), file=stream or sys.stderr)  # type: ignore[call-overload]
