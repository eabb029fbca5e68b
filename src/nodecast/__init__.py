"""nodecast: forecast GPU application performance on nodes you do not have.

The library is the product; ``nodecast.cli`` is a thin layer over it. The front door (docs/api.md)::

    import nodecast

    result = nodecast.forecast("run.sqlite", "h100-sxm5-server")    # ForecastResult
    replayed = nodecast.replay("run.sqlite")                         # ReplayResult
    proj = nodecast.project("run.sqlite", "h100-sxm5-server")       # Projection: per-op times, every model
    ev = nodecast.evaluate("run_on_a.sqlite", "run_on_b.sqlite")     # Evaluation: WMAPE and the whole runs
    sim = nodecast.simulate("cholesky", 38400, scheduler="dmdas")    # SimResult
    trace = nodecast.load_trace("run.sqlite")                        # Trace
    node = nodecast.load_machine("h100-sxm5-server")                 # Machine

Each name is imported on first use, not when ``nodecast`` is imported: the console script imports this package
before it installs its Ctrl-C handler, and the workflows pull in numpy, pandas and numba.

Units: traces keep integer nanoseconds as profilers write them; models work in SI floats (seconds, bytes,
bytes/s). Conversion happens only at the edges.
"""

from __future__ import annotations

import importlib

#: Public name -> (module, attribute). The layers below are in docs/extending.md; this is the one place that
#: reaches across all of them.
_FRONT_DOOR = {
    # workflows
    "forecast": ("nodecast.workflows.forecast", "forecast_trace"),
    "replay": ("nodecast.workflows.replay", "replay_trace"),
    "project": ("nodecast.workflows.from_files", "project_trace"),
    "evaluate": ("nodecast.workflows.from_files", "evaluate_traces"),
    "simulate": ("nodecast.workflows.simulate", "simulate"),
    "compare_targets": ("nodecast.workflows.targets", "compare_targets"),
    "collectives": ("nodecast.workflows.collectives", "collectives"),
    # inputs
    "load_trace": ("nodecast.traces.load", "load_trace"),
    "load_machine": ("nodecast.machines.lookup", "load_machine"),
    # result types
    "ForecastResult": ("nodecast.workflows.forecast", "ForecastResult"),
    "Comparison": ("nodecast.workflows.targets", "Comparison"),
    "ReplayResult": ("nodecast.workflows.replay", "ReplayResult"),
    "Projection": ("nodecast.cost.project", "Projection"),
    "Evaluation": ("nodecast.workflows.evaluate", "Evaluation"),
    "SimResult": ("nodecast.runtime.outputs", "SimResult"),
    "SweepResult": ("nodecast.workflows.simulate_sweep", "SweepResult"),
    "CollectivesResult": ("nodecast.workflows.collectives", "CollectivesResult"),
    "Trace": ("nodecast.traces.trace", "Trace"),
    "Machine": ("nodecast.machines.schema", "Machine"),
    # options
    "CostOptions": ("nodecast.cost.ops", "CostOptions"),
    "SimSetup": ("nodecast.cost.tasks", "SimSetup"),
    "RuntimeOptions": ("nodecast.runtime.options", "RuntimeOptions"),
    # errors
    "InputError": ("nodecast.errors", "InputError"),
}

__all__ = ["__version__", *_FRONT_DOOR]


def __getattr__(name: str) -> object:
    if name == "__version__":
        return _version()
    if name not in _FRONT_DOOR:
        raise AttributeError(f"module 'nodecast' has no attribute {name!r}")
    module, attribute = _FRONT_DOOR[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _version() -> str:
    # NOTE: __version__ is looked up on first use, not on import: importlib.metadata costs 80 ms, the largest part of
    # the time before the console script (nodecast.__main__) installs its Ctrl-C/SIGTERM handlers.
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("nodecast")
    except PackageNotFoundError:  # running from a source tree without install
        value = "0+unknown"
    globals()["__version__"] = value
    return value
