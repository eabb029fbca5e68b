"""The operation graph of a GPU program: one columnar graph for recorded traces and task-graph applications.

``build_graph(path)`` reads any trace nodecast reads with its host API records into an ``OpGraph``;
``nodecast.graph.taskgraph`` builds one from a task graph (StarPU's implicit dependencies) and
``nodecast.graph.apps`` submits tiled Cholesky and LU. Replaying a graph is ``nodecast.engine``'s job;
``nodecast.workflows.replay.replay_trace`` replays a trace on its own node and compares it with the measurement.
"""

from nodecast.graph.build import build, build_graph
from nodecast.graph.opgraph import Anchor, EdgeKind, Engine, OpGraph, OpKind

__all__ = ["Anchor", "EdgeKind", "Engine", "OpGraph", "OpKind", "build", "build_graph"]
