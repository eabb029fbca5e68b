"""Running out of memory as one line: how large the trace was, how much it needs, what to do.

A command over a whole trace holds every op several times over (the Trace,
the operation graph with about one host op per GPU op, the per-op costs and
the schedules on A and B), so its peak grows with the trace: ``nodecast
forecast`` with ``--json --html -o`` peaks at about ``BYTES_PER_OP`` per GPU op
above a fixed ``FIXED_BYTES`` (``benchmarks/bench_forecast_memory.py``;
docs/forecast.md, "Memory"). A trace too large for the machine ends in a
``MemoryError`` wherever an array is allocated (numpy's ``_ArrayMemoryError``
and pyarrow's ``ArrowMemoryError`` are MemoryErrors; ``ran_out`` also knows
the other shapes an address-space limit gives it); the CLI prints
``error().message`` instead of the traceback, removes the outputs the run
had finished (as for a stopped run: none is left that looks complete) and
exits with code 2::

    nodecast: error: big.sqlite: out of memory with 9,800,000 GPU ops (a forecast of that many needs about 7.7
    GiB; 4.0 GiB allowed (ulimit -v)). Run on a machine with more memory, or profile a shorter part of the run ...

The size comes from what the trace readers note as they go: ``note_file``
when a trace file is opened, ``note_gpu_ops`` as soon as a reader knows how
many ops it will hold (before it allocates their columns), so the line gives
the size even when reading is what ran out. This is process-wide state on
purpose: the error is raised wherever memory ran out, far from the reader
that knew the size. The last trace read is the one named.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass

from nodecast.errors import InputError

try:  # imported now: when memory has run out, importing a module can fail too
    import resource
except ImportError:  # not on Windows: the line says nothing of a limit there
    resource = None  # type: ignore[assignment]

#: Peak resident memory of ``nodecast forecast TRACE --to B --json --html -o OPS.parquet`` per GPU op of the trace
#: (its host calls included), bytes: bench_forecast_memory.py's "per op" on 2 M GPU ops (767; 755 on a real nsys
#: trace of 2 M GPU ops and 2 M runtime calls).
BYTES_PER_OP = 770
#: What the process takes whatever the trace (interpreter, numpy, pandas, pyarrow, numba, Bokeh; about 0.3 GiB
#: resident) plus the address space it reserves beyond what it touches, which the limit ``ulimit -v`` sets counts:
#: 1 M GPU ops ran under a 1.45 GB limit and not under 1.35 GB (peak RSS 1.06 GB), bytes.
FIXED_BYTES = 700 << 20

_HINT = ("Run on a machine with more memory, or profile a shorter part of the run (nsys profile --duration or a "
         "capture range, fewer iterations)")


@dataclass
class _Seen:
    """The last trace a reader opened: its name as given, its file's size (bytes) and its GPU ops when known."""

    path: str | None = None
    file_bytes: int | None = None
    gpu_ops: int | None = None


_seen = _Seen()


def note_file(shown: str | os.PathLike[str], file: str | os.PathLike[str] | None = None) -> None:
    """A trace is being read: ``shown`` is its name as the user gave it, ``file`` the file read (default ``shown``)."""
    try:
        size = os.stat(file if file is not None else shown).st_size
    except (OSError, ValueError):  # gone, unreadable, or a name the OS refuses: the line goes without a size
        size = None
    _seen.path, _seen.file_bytes, _seen.gpu_ops = os.fspath(shown), size, None


def note_gpu_ops(n: int) -> None:
    """The trace being read holds ``n`` GPU ops (kernels, copies, memsets)."""
    _seen.gpu_ops = int(n)


def need_bytes(gpu_ops: int) -> int:
    """About how much memory a forecast of ``gpu_ops`` GPU ops with every output needs, bytes (module docstring)."""
    return FIXED_BYTES + BYTES_PER_OP * int(gpu_ops)


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _room() -> str:
    """How much memory this process may use: the ``ulimit -v`` limit when one is set, else the machine's memory."""
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            return f"{_gib(soft)} allowed (ulimit -v)"
    try:
        return f"the machine has {_gib(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES'))}"
    except (AttributeError, OSError, ValueError):
        return "the machine's memory is unknown"


def ran_out(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from or while handling, is memory running out.

    A MemoryError (numpy's and pyarrow's included), and what an address-space
    limit makes of other requests for memory: a thread that cannot map its
    stack ("can't start new thread"), a shared library that cannot be mapped
    when first imported (numba's llvmlite: "failed to map segment"), an
    ``ENOMEM`` from the OS.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError):
            return True
        if isinstance(exc, OSError) and (exc.errno == errno.ENOMEM or "failed to map segment" in str(exc)):
            return True
        if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def error(removed: Sequence[os.PathLike[str] | str] = ()) -> InputError:
    """The one-line error for memory that ran out now (see the module docstring); ``removed``: the outputs the run
    had finished and that were removed (it says so)."""
    room = _room()
    gone = f" Removed {', '.join(map(os.fspath, removed))}, written before memory ran out" if removed else ""
    if _seen.gpu_ops is not None:
        n = _seen.gpu_ops
        reason = f"out of memory with {n:,} GPU ops (a forecast of that many needs about {_gib(need_bytes(n))}; {room})"
    elif _seen.file_bytes is not None:
        reason = f"out of memory reading it ({_seen.file_bytes / 1e6:,.1f} MB; {room})"
    else:
        return InputError(f"out of memory ({room})",
                          hint=f"Run on a machine with more memory, or give a smaller input.{gone}".rstrip("."))
    return InputError(reason, path=_seen.path, hint=f"{_HINT}.{gone}".rstrip("."))
