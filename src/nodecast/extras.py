"""Optional dependencies: which extra of ``pip install 'nodecast[EXTRA]'`` brings each, and the error when it is absent.

The default install carries what the main job needs (read traces, project,
evaluate, forecast, the terminal tables and the --html page). Figures and
parallel sweeps are extras because they weigh most of what the main job does
not use (docs/install.md has the measured sizes and import times):

- ``figures``: matplotlib (with fonttools and kiwisolver, about 73 MB) for
  the PNG/SVG/PDF figures (--png, --plot, --gantt, ``roofline``, ``curves -o``);
- ``parallel``: Dask distributed (about 30 MB with its own dependencies)
  for --jobs N and --cluster; without it several targets or a sweep run one
  at a time in this process.

Code that needs one imports it where it is used, never at module level, and
first calls ``require`` (before any work, so that nothing is half-written):
its absence is then one ``InputError`` line that names the extra.
"""

from __future__ import annotations

import importlib.util

from nodecast.errors import InputError

#: The module each extra provides -> (the extra's name, the package a person would recognise).
EXTRAS: dict[str, tuple[str, str]] = {
    "matplotlib": ("figures", "matplotlib"),
    "distributed": ("parallel", "Dask distributed"),
}


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (importing matplotlib takes 0.5 s)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module whose spec is unset
        return False


def hint(module: str) -> str:
    """``pip install 'nodecast[figures]'``: what installs ``module``."""
    return f"pip install 'nodecast[{EXTRAS[module][0]}]'"


def require(module: str, feature: str, *, key: str | None = None, path: str | None = None,
            otherwise: str | None = None) -> None:
    """Raise the one-line ``InputError`` naming the extra when ``module`` is not installed.

    ``feature`` says what needs it (``drawing a figure``); ``key`` is the
    option that asked (``--jobs``), ``path`` the output file; ``otherwise``
    what the user can do instead (``leave --jobs out``).
    """
    if not installed(module):
        extra, package = EXTRAS[module]
        raise InputError(f"{feature} needs {package}, which is not installed (the '{extra}' extra)", key=key,
                         path=path, hint=f"Install it: {hint(module)}" + (f", or {otherwise}" if otherwise else ""))
