"""nodecast: forecast GPU application performance on nodes you do not have.

The library is the product; ``nodecast.cli`` is a thin layer over it.
Units: traces keep integer nanoseconds as profilers write them; models work in
SI floats (seconds, bytes, bytes/s). Conversion happens only at the edges.
"""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # NOTE: __version__ is looked up on first use, not on import: importlib.metadata costs 80 ms, the largest part of
    # the time before the console script (nodecast.__main__) installs its Ctrl-C/SIGTERM handlers.
    if name != "__version__":
        raise AttributeError(f"module 'nodecast' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("nodecast")
    except PackageNotFoundError:  # running from a source tree without install
        value = "0+unknown"
    globals()["__version__"] = value
    return value
