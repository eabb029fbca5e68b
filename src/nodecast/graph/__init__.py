"""The operation graph of a GPU program, built from a trace, and its replay.

``build_graph(path)`` reads any trace nodecast reads with its host API
records into an ``OpGraph``; ``replay(graph, durations_s)`` schedules it in
one pass in dependency order; ``metrics`` gives end-to-end time, GPU-busy
time per device and the critical-path breakdown; ``replay_trace(path)``
does all of it and compares with the measured timeline.
"""

from nodecast.graph.build import build, build_graph
from nodecast.graph.opgraph import Anchor, EdgeKind, Engine, OpGraph, OpKind
from nodecast.graph.replay import Schedule, replay
from nodecast.graph.result import ReplayResult, replay_trace

__all__ = ["Anchor", "EdgeKind", "Engine", "OpGraph", "OpKind", "ReplayResult", "Schedule", "build",
           "build_graph", "replay", "replay_trace"]
