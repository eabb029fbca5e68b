"""Convert a trace to Arrow or Parquet (read back by nodecast) or CSV (for other tools): ``nodecast convert``.

Arrow and Parquet keep the Trace as it is (integer codes, ns timestamps,
names and metadata): Arrow is memory-mapped on reload (fastest), Parquet is
compact. CSV spells enums out as labels for spreadsheets and other tools;
nodecast does not read it back. The output format comes from the output's
extension, checked (with its folder) before the trace is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nodecast.errors import InputError
from nodecast.fileio import check_outputs, check_writable
from nodecast.traces.load import load_trace
from nodecast.traces.parquet import to_csv, write_arrow, write_parquet
from nodecast.traces.trace import Trace

WRITERS = {".parquet": write_parquet, ".arrow": write_arrow, ".csv": to_csv}


@dataclass
class Conversion:
    """A trace written in another format: where, and the trace itself."""

    path: Path
    trace: Trace

    def counts_text(self) -> str:
        """``3 kernels, 6 memcpy, 0 memsets, 2 syncs``: ops per kind."""
        counts = self.trace.counts()
        return ", ".join(f"{counts.get(k, 0)} {label}" for k, label in
                         (("kernel", "kernels"), ("memcpy", "memcpy"), ("memset", "memsets"), ("sync", "syncs")))


def check_output(path: str | os.PathLike[str], option: str = "-o") -> Path:
    """The output path if its extension is one nodecast converts to and its folder can be written; else InputError."""
    out = Path(path)
    if out.suffix.lower() not in WRITERS:
        raise InputError(f"unsupported output extension {out.suffix or '(none)'!r}", path=out,
                         hint="Name the output .parquet, .arrow or .csv")
    return check_writable(out, option)


def convert(trace: str | os.PathLike[str], out: str | os.PathLike[str]) -> Conversion:
    """Read ``trace`` (any supported format, or ``sample:NAME``) and write it to ``out`` (format by extension)."""
    path = check_output(out)  # a bad extension or missing folder fails now, not after reading a large trace
    check_outputs({"-o": path}, [trace])  # writing over the trace would lose it
    loaded = load_trace(trace)
    WRITERS[path.suffix.lower()](loaded, path)
    return Conversion(path, loaded)
