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

__all__ = ["console", "progress_bar", "render", "said", "wrote"]


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


def progress_bar(total: int, label: str):  # noqa: ANN201 (rich.progress.Progress, task id)
    """A progress bar on stderr (so that results piped from stdout stay clean), shown only at a terminal;
    returns ``(progress, task)``: use ``with progress:`` and ``progress.advance(task)``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err, transient=True, disable=not err.is_terminal)
    return progress, progress.add_task(label, total=total)
