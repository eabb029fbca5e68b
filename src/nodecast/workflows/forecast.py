"""Forecast a whole application on another node: the operation graph replayed with projected costs.

``forecast_trace(path, "h100-pcie-server")`` reads a trace and its host
records, builds the OpGraph (``nodecast.graph.build``), gives every op its
duration on the target (``nodecast.cost.ops``) and replays the graph
(``nodecast.engine.replay``) three ways:

* *measured*: the trace's own timeline, node A as recorded;
* *replayed*: the graph with its measured durations (what the dependency
  model alone gives on A; ``nodecast replay`` reports its fidelity);
* *forecast*: the graph with the target's durations and lags, node B; and,
  when a kernel model gives an interval, with the low and the high ends of
  every op's interval. A replay only takes maxima and sums of durations, so
  the low and high replays bound the forecast (on the event path, where
  copies share links, they are the replays at the two ends).

The replay on B is ``event_replay.replay_on_machine``: B's copy engines and
kernel slots (its GPU data sheet or machine file), and, when copies that
overlap cross one of B's links, the event path (the simulator's fluid
network); otherwise the single pass. ``ForecastResult.replay_path`` and
``replay_reason`` (and a note) say which ran and why.

End-to-end time (``metrics.end_to_end_s``) runs from the trace's first
timestamp (its first API call; its first GPU op start when it has no API
records: ``metrics.end_to_end_label``) to the end of the last GPU op; GPU-busy
time per device is the union of its ops' intervals. ``ForecastResult`` holds
all of it, plus the critical paths on A (replayed) and B (forecast), the
ops that moved the end-to-end time most, and where each op's time came
from; ``nodecast forecast`` prints it. Everything is seconds. Its notes say
what was assumed; those about an assumption (host work kept as measured on
A, a host assumed, ops no model handles ...) are weighed by their share of
B's critical path (``workflows.weigh``), and the decisive ones (``nodecast.notes``)
come first in every output. ``ForecastResult.change`` says in one line what B
kept of A and what the models moved (``cost.change``), and the replay on A
with A's times is the unchanged case every output shows beside the forecast.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast import notes as nn
from nodecast.engine import metrics
from nodecast.cost.change import Change, describe
from nodecast.cost.ops import CostOptions, OpCosts, costs
from nodecast.graph.opgraph import OpGraph, kind_codes
from nodecast.engine.replay import Schedule, replay
from nodecast.workflows.replay import measured_schedule
from nodecast.workflows.weigh import weigh
from nodecast.machines.compose import node_notes
from nodecast.notes import OPS_KEPT, Note, from_
from nodecast.headline import Number
from nodecast.speedup import MEANING, SPEEDUP
from nodecast.speedup import speedup as time_ratio
from nodecast.units import fmt_seconds
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.traces.api import ApiCalls
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

#: Labels of the three end-to-end values, as printed and in ``summary()``.
MEASURED, REPLAYED, FORECAST = "measured on A", "replayed on A", "forecast on B"


@dataclass
class ForecastResult:
    """One trace forecast on one target node (seconds throughout; see the module docstring)."""

    graph: OpGraph
    source: Machine
    target: Machine
    costs: OpCosts
    measured: Schedule
    replayed: Schedule
    forecast: Schedule
    low: Schedule | None
    high: Schedule | None
    source_path: metrics.CriticalPath
    target_path: metrics.CriticalPath
    notes: list[str] = field(default_factory=list)
    replay_path: str = "single-pass"  # how B was replayed: "single-pass" or "event" (event_replay)
    replay_reason: str = ""  # why that path
    change: Change | None = None  # what B kept of A and what it changed (``cost.change``): one line

    # -- whole-program values ------------------------------------------------------------------
    @property
    def measured_end_to_end_s(self) -> float:
        """First API call to last GPU op end on A, as recorded."""
        return metrics.end_to_end_s(self.graph, self.measured)

    @property
    def replayed_end_to_end_s(self) -> float:
        """The same, replayed on A with the measured durations."""
        return metrics.end_to_end_s(self.graph, self.replayed)

    @property
    def end_to_end_s(self) -> float:
        """The forecast end-to-end time on B."""
        return metrics.end_to_end_s(self.graph, self.forecast)

    @property
    def interval_s(self) -> tuple[float, float]:
        """(low, high) end-to-end on B from the ops' intervals; both the forecast when no model gives one."""
        mid = self.end_to_end_s
        low = metrics.end_to_end_s(self.graph, self.low) if self.low is not None else mid
        high = metrics.end_to_end_s(self.graph, self.high) if self.high is not None else mid
        return low, high

    @property
    def speedup(self) -> float:
        """Measured end-to-end on A over the forecast on B (> 1: B is faster; ``nodecast.speedup``)."""
        return time_ratio(self.measured_end_to_end_s, self.end_to_end_s)

    def headline(self) -> list[Number]:
        """End to end measured on A, forecast on B (with the interval when a model gives one), and A / B."""
        low, high = self.interval_s
        has = self.costs.has_interval
        return [Number(f"end to end, measured on {self.source.name} (A)", self.measured_end_to_end_s, "s"),
                Number(f"end to end, forecast on {self.target.name} (B)", self.end_to_end_s, "s",
                       low if has else None, high if has else None,
                       "interval: the graph replayed with every op at the low, then the high end of its model's "
                       "interval" if has else ""),
                Number(f"{SPEEDUP}, {MEANING}", self.speedup, "x")]

    def busy_s(self) -> dict[str, dict[int, float]]:
        """GPU-busy time per device: measured on A, replayed on A, forecast on B."""
        return {MEASURED: metrics.gpu_busy_s(self.graph, self.measured),
                REPLAYED: metrics.gpu_busy_s(self.graph, self.replayed),
                FORECAST: metrics.gpu_busy_s(self.graph, self.forecast)}

    def timelines(self) -> list[tuple[str, Schedule]]:
        """The timelines a Chrome trace shows side by side: measured on A, forecast on B."""
        return [(f"measured on {self.source.name}", self.measured), (f"forecast on {self.target.name}",
                                                                       self.forecast)]

    # -- tables ----------------------------------------------------------------------------------
    def categories(self) -> pd.DataFrame:
        """GPU time per category (kernels, memsets, copies per transfer class): ops, on A, on B, models."""
        g = self.graph
        gpu = g.gpu_mask()
        code, labels = metrics.op_category(g, np.flatnonzero(gpu))
        c = self.costs
        # Grouped by the integer codes and named afterwards: a text per GPU op cost about 100 B per op.
        df = pd.DataFrame({"category": code, "source_s": g.ops["source_dur_s"][gpu], "target_s": c.duration_s[gpu],
                           "low_s": c.low_s[gpu], "high_s": c.high_s[gpu], "model": c.model[gpu]}, copy=False)
        models = c.model_names
        out = df.groupby("category", sort=False).agg(
            ops=("source_s", "size"), source_s=("source_s", "sum"), target_s=("target_s", "sum"),
            low_s=("low_s", "sum"), high_s=("high_s", "sum"),
            models=("model", lambda m: ", ".join(f"{models[k]} x{v:,}" for k, v in m.value_counts().items())))
        out.index = pd.Index([labels[k] for k in out.index], dtype=object, name="category")
        return out.sort_index().reset_index()

    def critical_paths(self) -> pd.DataFrame:
        """Critical-path time per category on A (replayed) and on B (forecast), and the change."""
        a, b = self.source_path.breakdown_s, self.target_path.breakdown_s
        cats = sorted(set(a) | set(b), key=lambda c: -max(a.get(c, 0.0), b.get(c, 0.0)))
        rows = [{"category": c, "on_a_s": a.get(c, 0.0), "on_b_s": b.get(c, 0.0)} for c in cats]
        df = pd.DataFrame(rows, columns=["category", "on_a_s", "on_b_s"])
        df["change_s"] = self._change(df["on_b_s"] - df["on_a_s"])
        return df

    def _change(self, delta: pd.Series) -> pd.Series:
        """``delta`` with float rounding (below 1e-9 of the end to end, as end - start differences leave) as 0."""
        tol = 1e-9 * max(self.end_to_end_s, self.replayed_end_to_end_s)
        return delta.where(delta.abs() > tol, 0.0)

    def movers(self, top: int = 10) -> pd.DataFrame:
        """The ops that moved the end-to-end time most: time they add to the critical path on A and on B.

        Ops are grouped by category and name (every launch of one kernel
        together); sorted by the size of the change, largest first.
        """
        g = self.graph
        frames = []
        for side, path in (("on_a_s", self.source_path), ("on_b_s", self.target_path)):
            frames.append(pd.DataFrame({"op": path.ops, side: path.op_time_s}))
        both = frames[0].merge(frames[1], on="op", how="outer").fillna(0.0)
        if both.empty:
            return pd.DataFrame(columns=["category", "name", "ops", "on_a_s", "on_b_s", "change_s"])
        op = both["op"].to_numpy(np.int64)
        code, labels = metrics.op_category(g, op)
        name_code, texts = metrics.name_codes(g.names)
        # Grouped by codes, named afterwards (a path can hold every host call of the trace).
        both["category"] = code
        both["name"] = name_code[g.ops["name_id"][op]]
        out = both.groupby(["category", "name"], sort=False).agg(
            ops=("op", "size"), on_a_s=("on_a_s", "sum"), on_b_s=("on_b_s", "sum")).reset_index()
        out["category"] = np.asarray(labels, dtype=object)[out["category"].to_numpy(np.int64)]
        out["name"] = np.asarray(texts, dtype=object)[out["name"].to_numpy(np.int64)]
        out["change_s"] = self._change(out["on_b_s"] - out["on_a_s"])
        out = out[out["change_s"] != 0]
        return out.reindex(out["change_s"].abs().sort_values(ascending=False).index).head(top).reset_index(drop=True)

    def kept(self) -> pd.DataFrame:
        """GPU ops no model handled (kept at their source time), by category and name."""
        g = self.graph
        mask = self.costs.kept(g)
        code, labels = metrics.op_category(g)
        names = np.array([*g.names, ""], dtype=object)
        df = pd.DataFrame({"category": np.asarray(labels, dtype=object)[code[mask]],
                           "name": names[g.ops["name_id"][mask]], "source_s": g.ops["source_dur_s"][mask]})
        out = df.groupby(["category", "name"], sort=True).agg(ops=("source_s", "size"),
                                                              source_s=("source_s", "sum")).reset_index()
        return out.sort_values("source_s", ascending=False).reset_index(drop=True)

    def ops_table(self, rows: slice | None = None) -> pd.DataFrame:
        """One row per op: what it is, its model, its durations on A and B, its start/end measured and forecast.

        ``rows``: only the ops ``rows`` (a slice of op indices), so that a file
        can be written a block of rows at a time (``export.write_ops``).
        """
        g = self.graph
        rows = slice(0, len(g)) if rows is None else slice(*rows.indices(len(g)))
        op = np.arange(rows.start, rows.stop, rows.step)
        code, labels = metrics.op_category(g, op)
        names = np.array([*g.names, ""], dtype=object)
        c = self.costs
        return pd.DataFrame({
            "op": op,
            "kind": pd.Categorical.from_codes(*kind_codes(g.ops["kind"][rows])),
            "category": np.asarray(labels, dtype=object)[code],
            "device": g.ops["device"][rows],
            "queue": g.ops["queue"][rows],
            "name": names[g.ops["name_id"][rows]],
            "bytes": g.ops["bytes"][rows],
            "model": np.asarray(c.model_names, dtype=object)[c.model[rows]],
            "source_dur_s": g.ops["source_dur_s"][rows],
            "target_dur_s": c.duration_s[rows],
            "target_low_s": c.low_s[rows],
            "target_high_s": c.high_s[rows],
            "measured_start_s": self.measured.start_s[rows],
            "measured_end_s": self.measured.end_s[rows],
            "forecast_start_s": self.forecast.start_s[rows],
            "forecast_end_s": self.forecast.end_s[rows],
        }, copy=False)  # the numbers are views of the result's arrays: a block of rows costs its texts only

    def summary(self, top: int = 10) -> dict[str, Any]:
        """Every value of the result as plain Python (JSON-ready)."""
        low, high = self.interval_s
        busy = self.busy_s()
        src_time = metrics.gpu_time_s(self.graph, self.graph.ops["source_dur_s"])
        tgt_time = metrics.gpu_time_s(self.graph, self.costs.duration_s)

        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
                    for row in df.to_dict(orient="records")]

        return {
            "trace": self.graph.source, "format": self.graph.format, "source": self.source.name,
            "target": self.target.name,
            "end_to_end_s": {"measured": self.measured_end_to_end_s, "replayed": self.replayed_end_to_end_s,
                             "forecast": self.end_to_end_s, "low": low, "high": high},
            "gpu_busy_s": {str(d): {"measured": busy[MEASURED].get(d), "replayed": busy[REPLAYED].get(d),
                                    "forecast": busy[FORECAST].get(d)} for d in busy[MEASURED]},
            "gpu_time_s": {str(d): {"source": src_time[d], "forecast": tgt_time.get(d)} for d in src_time},
            "categories": records(self.categories()),
            "critical_path_s": {"source": self.source_path.breakdown_s, "target": self.target_path.breakdown_s},
            "movers": records(self.movers(top)),
            "models": records(self.costs.provenance(self.graph)),
            "kept": records(self.kept()),
            "model_chains": self.costs.chains,
            "replay": {"path": self.replay_path, "reason": self.replay_reason},
            "change": self.change.to_dict() if self.change is not None else None,
            "notes": nn.records(self.notes),
        }


def forecast(trace: Trace, api: ApiCalls, source: Machine, target: Machine, options: CostOptions | None = None, *,
             graph: OpGraph | None = None, copy_engines_per_direction: int | None = None) -> ForecastResult:
    """Forecast ``trace`` (with its host records ``api``, recorded on ``source``) on ``target``.

    ``graph``: the trace's OpGraph when already built (several targets share
    one); else it is built here.
    """
    from nodecast.graph.build import build

    if graph is None:
        graph = build(trace, api, copy_engines_per_direction=copy_engines_per_direction)
    from nodecast.engine.event_replay import replay_on_machine
    from nodecast.engine.platform import Platform

    c = costs(graph, trace, source, target, options)
    on_b = c.apply(graph)
    platform = Platform.from_machine(target)

    def on_target(durations_s: np.ndarray):  # noqa: ANN202
        return replay_on_machine(on_b, durations_s, target, trace=trace, platform=platform,
                                 copy_engines_per_direction=copy_engines_per_direction)

    shared = on_target(c.duration_s)
    fc = shared.schedule
    low = high = None
    if c.has_interval:
        low = on_target(c.low_s).schedule
        high = on_target(c.high_s).schedule
    replayed = replay(graph, graph.ops["source_dur_s"])
    notes = [*node_notes(source, target), *from_(graph.notes, "graph"), *from_(c.notes, "costs"),
             *from_([*shared.notes, f"replay on B: {shared.summary}"], "replay on B")]
    kept = c.kept(graph)
    if kept.any():
        n_kept = int(kept.sum())
        notes.append(Note(f"{plural(n_kept, 'GPU op')} that no model handles "
                          f"{'keeps its' if n_kept == 1 else 'keep their'} time on A "
                          f"({fmt_seconds(float(graph.ops['source_dur_s'][kept].sum()))} in all; listed as 'kept')",
                          OPS_KEPT, origin="costs"))
    target_path = metrics.critical_path(shared.graph, fc)
    notes = weigh(notes, graph, c, target_path, metrics.end_to_end_s(graph, fc))
    return ForecastResult(
        graph=graph, source=source, target=target, costs=c,
        measured=measured_schedule(graph, trace, api), replayed=replayed, forecast=fc, low=low, high=high,
        source_path=metrics.critical_path(graph, replayed), target_path=target_path,
        notes=notes, replay_path=shared.path, replay_reason=shared.reason,
        change=describe(graph, source, target, c, options),
    )


def read_api_for(path: str | os.PathLike[str]) -> ApiCalls:
    """The host records of a trace file, or of ``sample:NAME``."""
    import importlib.resources

    from nodecast.traces.load import load_api as read_api
    from nodecast.traces.load import SAMPLE_PREFIX, sample_file

    text = os.fspath(path)
    if not text.startswith(SAMPLE_PREFIX):
        return read_api(path)
    with importlib.resources.as_file(sample_file(text[len(SAMPLE_PREFIX):])) as file:
        api = read_api(file)
    api.meta.source = text
    return api


def read_trace_and_api(path: str | os.PathLike[str]) -> tuple[Trace, ApiCalls]:
    """A trace file (or ``sample:NAME``) and its host records."""
    from nodecast.traces.load import load_run

    return load_run(path)


def forecast_trace(path: str | os.PathLike[str], target: str | Machine, source: str | Machine | None = None,
                   options: CostOptions | None = None, *, allow_gpu_mismatch: bool = False,
                   copy_engines_per_direction: int | None = None) -> ForecastResult:
    """Read a trace file and forecast it on ``target`` (a Machine, or a catalogue name, file or spec string).

    ``source``: the node the trace was recorded on; None picks it from the
    trace's GPU name (``nodecast.machines.resolve_source``), a name is
    checked against it. A ``target`` naming a GPU only is the source's node
    with that GPU (``workflows.target_nodes.target_machine``).
    """
    from nodecast.workflows.target_nodes import target_machine
    from nodecast.machines import resolve_source

    trace, api = read_trace_and_api(path)
    src = source if source is not None and not isinstance(source, str) else \
        resolve_source(trace, source, allow_gpu_mismatch)
    tgt = target_machine(target, src) if isinstance(target, str) else target
    return forecast(trace, api, src, tgt, options, copy_engines_per_direction=copy_engines_per_direction)
