"""nodecast: forecast GPU application performance on nodes you do not have.

The library is the product; ``nodecast.cli`` is a thin layer over it.
Units: traces keep integer nanoseconds as profilers write them; models work in
SI floats (seconds, bytes, bytes/s). Conversion happens only at the edges.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nodecast")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
