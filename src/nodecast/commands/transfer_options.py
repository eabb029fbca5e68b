"""Options of the transfer models, shared by ``project``, ``evaluate`` and ``forecast``.

``add_transfer_options(parser)`` adds ``--one-byte-us KIND=µs`` (repeatable)
and ``--host-memory pinned|pageable``; ``transfer_options(args)`` returns them
as the keyword arguments ``nodecast.cost.project.project`` takes
(``one_byte_s``, ``host_memory``). Values are checked by the library
(``nodecast.models.one_byte.check_given``, ``nodecast.cost.project.check_host_memory``),
so a user of the Python API gets the same errors.
"""

from __future__ import annotations

import argparse
from typing import Any

from nodecast.errors import InputError
from nodecast.traces.kinds import HOST_MEMORY_KINDS


def add_transfer_options(parser: argparse.ArgumentParser) -> None:
    """--one-byte-us and --host-memory."""
    add_one_byte_option(parser)
    add_host_memory_option(parser)


def add_one_byte_option(parser: argparse.ArgumentParser) -> None:
    """--one-byte-us KIND=µs, repeatable."""
    parser.add_argument("--one-byte-us", metavar="KIND=US", action="append", default=None,
                        help="1-byte cost L+O in µs of one transfer kind (htod_pinned=2.5) or of every kind "
                             "(all=2.5); repeatable; used instead of machine files and the trace's estimate")


def add_host_memory_option(parser: argparse.ArgumentParser) -> None:
    """--host-memory pinned|pageable: the kind of host memory a trace does not record."""
    parser.add_argument("--host-memory", choices=HOST_MEMORY_KINDS, default=None,
                        help="host memory of the copies whose trace does not record whether it was pinned or "
                             "pageable (nvprof GPU-trace CSV, ROCm Kineto); default: projected both ways, as an "
                             "interval, the pageable end used")


def one_byte_given(args: argparse.Namespace) -> dict[str, float] | None:
    """--one-byte-us as ``{kind: seconds}`` (kinds and ranges are checked by the library)."""
    if not getattr(args, "one_byte_us", None):
        return None
    out: dict[str, float] = {}
    for text in args.one_byte_us:
        kind, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not kind or not value:
            raise InputError(f"expected KIND=µs, got {text!r}", key="--one-byte-us",
                             hint="e.g. --one-byte-us htod_pinned=2.5, or all=2.5 for every kind")
        try:
            us = float(value)
        except ValueError:
            raise InputError(f"{kind}: not a number of µs ({value!r})", key="--one-byte-us") from None
        if kind.lower() in out:
            raise InputError(f"{kind} is given twice", key="--one-byte-us")
        out[kind.lower()] = us * 1e-6
    return out


def host_memory(args: argparse.Namespace) -> str | None:
    """--host-memory (None when not given)."""
    return getattr(args, "host_memory", None)


def transfer_options(args: argparse.Namespace) -> dict[str, Any]:
    """``{"one_byte_s": ..., "host_memory": ...}`` for ``project``/``evaluate``."""
    return {"one_byte_s": one_byte_given(args), "host_memory": host_memory(args)}
