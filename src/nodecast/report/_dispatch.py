"""One output function per kind, chosen by the result's type, whose implementations are submodules.

``Dispatch`` wraps ``functools.singledispatch``: ``report.terminal.render``,
``report.files.document``/``table``, ``report.figures.draw`` and
``report.html.render`` are each one ``Dispatch``; a submodule of the
package (``report/terminal/forecast.py``) registers the implementation for
one result type (``@render.register(ForecastResult)``). Submodules are found
with ``pkgutil`` and imported on the first call, not when the package is
imported: a command pays for the renderers (and their imports: matplotlib,
Bokeh) only when it renders, and nobody edits a shared list to add one.
Modules whose name starts with ``_`` are helpers and are not imported.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any


class Dispatch:
    """A function of a result (its first argument), implemented per result type by the package's submodules."""

    def __init__(self, package: str, name: str, what: str) -> None:
        self.package = package
        self.name = name
        self.what = what
        self._impl = functools.singledispatch(self._missing)
        self._loaded = False
        self._loading = False

    def register(self, cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: the implementation for results of type ``cls`` (and its subclasses)."""
        return self._impl.register(cls)

    def load(self) -> None:
        """Import every submodule of the package (once), so that each registers its implementations."""
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            pkg = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(pkg.__path__):
                if not info.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{info.name}")
            self._loaded = True
        finally:
            self._loading = False

    def handles(self, cls: type) -> bool:
        """Whether an implementation is registered for ``cls``."""
        self.load()
        return self._impl.dispatch(cls) is not self._impl.dispatch(object)

    def __call__(self, result: Any, *args: Any, **kwargs: Any) -> Any:
        self.load()
        return self._impl(result, *args, **kwargs)

    def _missing(self, result: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.package}.{self.name}: no {self.what} for a {type(result).__name__} "
                        f"(add a submodule of {self.package} that registers one)")

    def __repr__(self) -> str:
        return f"<{self.package}.{self.name}: {self.what} per result type>"
