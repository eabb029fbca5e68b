"""Terminal output of every command's result: ``render(result, console=None, **options)``.

One submodule per result type (``terminal/forecast.py`` renders a
``ForecastResult``) registers its implementation with
``@render.register(ResultType)``; submodules are imported on the first call
(``report._dispatch``). Implementations print rich tables through
``report.tables.render`` and notes as plain lines; ``console`` defaults to
``report.tables.console()`` (160 columns when piped). Options are keyword
arguments the command passes on (``top=10``).
"""

from __future__ import annotations

from nodecast.report._dispatch import Dispatch
from nodecast.report.tables import console

#: ``render(result, console=None, **options) -> None``: print ``result`` for a person at a terminal.
render = Dispatch(__name__, "render", "terminal renderer")

__all__ = ["console", "render"]
