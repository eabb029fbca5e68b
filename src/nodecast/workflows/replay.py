"""``replay_trace``: a trace replayed on its own node, measured against replayed, as one object.

``ReplayResult`` is what ``nodecast replay`` prints and writes; everything in
it is available from Python::

    from nodecast.graph import replay_trace
    r = replay_trace("run.sqlite")
    r.measured_end_to_end_s, r.replayed_end_to_end_s, r.end_to_end_error

The measured schedule is the trace's own timeline (GPU ops from the Trace,
host calls from the ApiCalls, a WAIT op ending where its call returned); the
replayed one is ``replay(graph, graph.source_durations())``, which reads only
durations, host gaps and the first timestamp, run on the node the trace was
recorded on (``event_replay.replay_on_machine``: its links, copy engines and
kernel slots; the node picked from the trace's GPU unless ``machine`` names
one): the single pass, or the event path when copies that overlap share a
link. ``ReplayResult.replay_path`` and ``replay_reason`` say which and why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nodecast.engine import metrics
from nodecast.traces.api import ApiCalls
from nodecast.graph.build import build
from nodecast.notes import from_, records
from nodecast.graph.opgraph import OpGraph, OpKind, kind_codes
from nodecast.engine.replay import Schedule, replay
from nodecast.headline import Number
from nodecast.traces.trace import Trace

if TYPE_CHECKING:
    import pandas as pd

    from nodecast.machines.schema import Machine


@dataclass
class ReplayResult:
    """A same-node replay of one trace with its measured durations (seconds throughout)."""

    graph: OpGraph
    measured: Schedule
    replayed: Schedule
    measured_end_to_end_s: float
    replayed_end_to_end_s: float
    measured_busy_s: dict[int, float]
    replayed_busy_s: dict[int, float]
    gpu_time_s: dict[int, float]
    critical_path_s: dict[str, float]
    notes: list[str] = field(default_factory=list)
    replay_path: str = "single-pass"  # "single-pass" or "event" (event_replay)
    replay_reason: str = ""  # why that path

    @property
    def end_to_end_error(self) -> float:
        """(replayed - measured) / measured end-to-end time, a fraction."""
        return _rel(self.replayed_end_to_end_s, self.measured_end_to_end_s)

    def busy_error(self, device: int) -> float:
        """(replayed - measured) / measured GPU-busy time of a device, a fraction."""
        return _rel(self.replayed_busy_s.get(device, 0.0), self.measured_busy_s.get(device, 0.0))

    def headline(self) -> list[Number]:
        """End to end measured and replayed, and the replay's error (%)."""
        return [Number("end to end, measured", self.measured_end_to_end_s, "s"),
                Number("end to end, replayed with the measured durations", self.replayed_end_to_end_s, "s"),
                Number("replay error, (replayed - measured) / measured", 100 * self.end_to_end_error, "%")]

    def table(self) -> pd.DataFrame:
        """End to end, then per GPU its busy time and op time: measured, replayed, error (%)."""
        import pandas as pd

        rows = [{"quantity": metrics.end_to_end_label(self.graph), "measured": self.measured_end_to_end_s,
                 "replayed": self.replayed_end_to_end_s, "error": 100 * self.end_to_end_error}]
        for d in sorted(self.measured_busy_s):
            rows.append({"quantity": f"GPU {d} busy (union of op intervals)", "measured": self.measured_busy_s[d],
                         "replayed": self.replayed_busy_s.get(d, float("nan")), "error": 100 * self.busy_error(d)})
            rows.append({"quantity": f"GPU {d} op time (sum of durations)", "measured": self.gpu_time_s[d],
                         "replayed": self.gpu_time_s[d], "error": 0.0})
        return pd.DataFrame(rows)

    def critical_path_table(self) -> pd.DataFrame:
        """The replay's critical path by category, longest first: time (s) and share of the total (0-1)."""
        import pandas as pd

        total = sum(self.critical_path_s.values())
        return pd.DataFrame([{"category": k, "time": v, "share": v / total if total else float("nan")}
                             for k, v in sorted(self.critical_path_s.items(), key=lambda kv: -kv[1])],
                            columns=["category", "time", "share"])

    def summary(self) -> dict[str, Any]:
        """Every value of the result as plain Python (JSON-ready; seconds, errors as fractions)."""
        g = self.graph
        return {
            "source": g.source, "format": g.format, "gpus": {str(k): v for k, v in g.gpus.items()},
            "end_to_end_s": {"measured": self.measured_end_to_end_s, "replayed": self.replayed_end_to_end_s,
                             "error": self.end_to_end_error},
            "gpu_busy_s": {str(d): {"measured": self.measured_busy_s[d], "replayed": self.replayed_busy_s.get(d),
                                    "error": self.busy_error(d)} for d in self.measured_busy_s},
            "gpu_time_s": {str(d): v for d, v in self.gpu_time_s.items()},
            "critical_path_s": self.critical_path_s,
            "graph": g.counts(), "params": g.params, "replay": {"path": self.replay_path, "reason": self.replay_reason},
            "notes": records(self.notes),
        }

    def timelines(self) -> list[tuple[str, Schedule]]:
        """The timelines a Chrome trace shows side by side: measured and replayed."""
        return [("measured", self.measured), ("replayed", self.replayed)]

    def ops_table(self, rows: slice | None = None):  # noqa: ANN201 (pandas is imported lazily)
        """One row per op: kind, device, queue, name, measured and replayed start/end (s after origin).

        ``rows``: only the ops ``rows`` (a slice of op indices; ``export.write_ops`` writes a block at a time).
        """
        import pandas as pd

        g = self.graph
        rows = slice(0, len(g)) if rows is None else slice(*rows.indices(len(g)))
        names = np.array([*g.names, ""], dtype=object)
        return pd.DataFrame({
            "op": np.arange(rows.start, rows.stop, rows.step),
            "kind": pd.Categorical.from_codes(*kind_codes(g.ops["kind"][rows])),
            "device": g.ops["device"][rows],
            "queue": g.ops["queue"][rows],
            "name": names[g.ops["name_id"][rows]],
            "bytes": g.ops["bytes"][rows],
            "measured_start_s": self.measured.start_s[rows],
            "measured_end_s": self.measured.end_s[rows],
            "replayed_start_s": self.replayed.start_s[rows],
            "replayed_end_s": self.replayed.end_s[rows],
        }, copy=False)  # the numbers are views of the result's arrays


def _rel(value: float, reference: float) -> float:
    return (value - reference) / reference if reference else float("nan")


def measured_schedule(graph: OpGraph, trace: Trace, api: ApiCalls) -> Schedule:
    """The recorded start/end of every op of ``graph`` (s after its origin), for comparison only."""
    n = len(graph)
    start = np.empty(n, np.float64)
    end = np.empty(n, np.float64)
    origin = graph.origin_ns
    kind, row = graph.ops["kind"], graph.ops["trace_row"]
    gpu = kind <= OpKind.MEMSET
    start[gpu] = (trace["start_ns"][row[gpu]] - origin) * 1e-9
    end[gpu] = (trace["end_ns"][row[gpu]] - origin) * 1e-9
    host = kind == OpKind.API
    start[host] = (api["start_ns"][row[host]] - origin) * 1e-9
    end[host] = start[host] + graph.ops["source_dur_s"][host]
    wait = kind == OpKind.WAIT
    end[wait] = (api["end_ns"][row[wait]] - origin) * 1e-9
    start[wait] = end[wait] - graph.ops["source_dur_s"][wait]
    return Schedule(start, end, origin)


def replay_trace(path: str | os.PathLike[str], *, copy_engines_per_direction: int | None = None,
                 machine: str | Machine | None = None) -> ReplayResult:
    """Build the OpGraph of a trace file and replay it with its own measured durations (see the module docstring)."""
    from nodecast.traces.load import load_run

    trace, api = load_run(path)
    return replay_result(trace, api, copy_engines_per_direction=copy_engines_per_direction, machine=machine)


def replay_result(trace: Trace, api: ApiCalls, *, copy_engines_per_direction: int | None = None,
                  machine: str | Machine | None = None) -> ReplayResult:
    """``replay_trace`` for a Trace and ApiCalls already in memory."""
    from nodecast.errors import InputError
    from nodecast.engine.event_replay import replay_on_machine
    from nodecast.machines import load_machine, resolve_source

    graph = build(trace, api, copy_engines_per_direction=copy_engines_per_direction)
    measured = measured_schedule(graph, trace, api)
    dur = graph.source_durations()
    notes = from_(graph.notes, "graph")
    try:
        node = load_machine(machine) if isinstance(machine, str) else machine if machine is not None else \
            resolve_source(trace, None)
    except InputError as exc:
        if machine is not None:
            raise
        node = None
        notes.append(f"no node picked from the trace's GPU ({exc.reason}): replayed without the node's links, copy "
                     "engines and kernel slots (the single pass)")
    if node is None:
        replayed, replayed_graph, path, reason = replay(graph, dur), graph, "single-pass", "no node to replay on"
    else:
        shared = replay_on_machine(graph, dur, node, trace=trace, copy_engines_per_direction=copy_engines_per_direction)
        replayed, replayed_graph, path, reason = shared.schedule, shared.graph, shared.path, shared.reason
        notes += from_([*shared.notes, f"replay on {node.name}: {shared.summary}"], "replay")
    return ReplayResult(
        graph=graph,
        measured=measured,
        replayed=replayed,
        measured_end_to_end_s=metrics.end_to_end_s(graph, measured),
        replayed_end_to_end_s=metrics.end_to_end_s(graph, replayed),
        measured_busy_s=metrics.gpu_busy_s(graph, measured),
        replayed_busy_s=metrics.gpu_busy_s(graph, replayed),
        gpu_time_s=metrics.gpu_time_s(graph, dur),
        critical_path_s=metrics.critical_path(replayed_graph, replayed).breakdown_s,
        notes=notes, replay_path=path, replay_reason=reason,
    )
