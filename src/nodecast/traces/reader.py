"""What nodecast needs of a trace format: how to tell its files apart, its Trace, and its host API records.

A format is one ``Reader`` (defined beside the format's own code) and one
line of ``traces.formats.READERS``. ``traces.load`` reads the start of a file
once into a ``Probe`` and asks each reader in turn whether the file is of its
format (``claims``), then reads the Trace, the API calls (``ApiCalls``) or
both (a ``Run``) with the reader that claimed it. A format without host
records gives an empty ``ApiCalls`` whose note says so (``without_api``).

The probe names the container the first bytes show (SQLite, Parquet, Arrow,
gzip, JSON, plain text or other binary), so that a reader looks only at
files of its container, in an order that never depends on the registry's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from nodecast.traces._sqlite import SQLITE_MAGIC, SqliteExport
from nodecast.traces.api import ApiCalls, ApiMeta
from nodecast.traces.trace import Trace

#: First bytes of a Parquet file, of an Arrow IPC file and of a gzip stream.
PARQUET_MAGIC = b"PAR1"
ARROW_MAGIC = b"ARROW1"
GZIP_MAGIC = b"\x1f\x8b"

#: Containers, as ``Probe.container`` names them.
SQLITE, PARQUET, ARROW, GZIP, JSON, TEXT, BINARY = "sqlite", "parquet", "arrow", "gzip", "json", "text", "binary"

#: How many bytes of a file the probe reads.
HEAD_BYTES = 1 << 16


def container(head: bytes) -> str:
    """The container a file's first bytes show; JSON may start with a byte-order mark and white space, text is
    anything else without a NUL byte."""
    if head.startswith(SQLITE_MAGIC):
        return SQLITE
    if head.startswith(PARQUET_MAGIC):
        return PARQUET
    if head.startswith(ARROW_MAGIC):
        return ARROW
    if head.startswith(GZIP_MAGIC):
        return GZIP
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return JSON
    return TEXT if b"\x00" not in head else BINARY


class Probe:
    """The start of one file (``head``, at most ``HEAD_BYTES``), read once for every reader's ``claims``; what
    more a reader may ask (SQLite table names, a Parquet schema) is read on first use and kept."""

    def __init__(self, path: Path, head: bytes) -> None:
        self.path = path
        self.head = head
        self.container = container(head)

    @cached_property
    def tables(self) -> set[str]:
        """Table names of a SQLite file (InputError when it is damaged)."""
        with SqliteExport(self.path) as db:
            return db.tables

    @cached_property
    def text(self) -> str:
        """The head as text (UTF-8, undecodable bytes replaced)."""
        return self.head.decode("utf-8", errors="replace")

    @cached_property
    def parquet_schema(self) -> Any:
        """The ``pyarrow`` schema of a Parquet file, or None when it cannot be read (the reader says why)."""
        import pyarrow as pa  # noqa: PLC0415 (pyarrow loads only for Parquet files)
        import pyarrow.parquet as pq  # noqa: PLC0415

        try:
            return pq.read_schema(self.path)
        except (pa.ArrowException, OSError):
            return None


@dataclass(frozen=True)
class Reader:
    """One trace format: ``name`` (what ``traces.load.detect_format`` answers), ``claims`` (whether a probed
    file is of this format; it may raise InputError for a file that nearly is), ``read_trace`` and
    ``read_api`` (each given the file's path; InputError on anything the file gets wrong)."""

    name: str
    claims: Callable[[Probe], bool]
    read_trace: Callable[[Path], Trace]
    read_api: Callable[[Path], ApiCalls]


class Run(NamedTuple):
    """A trace file read whole: its GPU operations and its host API calls (``trace, api = load_run(path)``)."""

    trace: Trace
    api: ApiCalls


def without_api(name: str, what: str) -> Callable[[Path], ApiCalls]:
    """``read_api`` of a format that records no host calls: empty ApiCalls (format ``name``) whose note says
    ``what`` the file is and how its GPU ops are placed instead."""

    def read_api(path: Path) -> ApiCalls:
        return ApiCalls.empty(ApiMeta(source=str(path), format=name, notes=[
            f"{what} holds no host API records: GPU ops are placed by the recorded-offset fallback"]))

    return read_api
