"""Traces: the columnar Trace vocabulary and one reader per profiler format."""

from nodecast.traces.load import load_api, load_run, load_trace
from nodecast.traces.kinds import CopyKind, MemKind, OpKind, TransferClass
from nodecast.traces.reader import Run
from nodecast.traces.trace import COLUMNS, MISSING_NS, Trace, TraceMeta

__all__ = ["COLUMNS", "MISSING_NS", "CopyKind", "MemKind", "OpKind", "Run", "Trace", "TraceMeta", "TransferClass",
           "load_api", "load_run", "load_trace"]
