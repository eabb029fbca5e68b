"""Forecast one trace on several target nodes, or on a sweep over machine parameters, as one table.

The targets are ``TargetSpec`` (``workflows.target_nodes``: a machine spec
and the what-if parameters ``--sweep`` applies to it; its names are
importable from here too). ``compare_targets`` checks every target before
any forecast runs, builds the trace's OpGraph once, and forecasts each
target (``workflows.forecast``: only the costs and the replay run per
target) into one ``Comparison``: a row per target, the notes per target.

Running on Dask: like ``simulate``'s sweeps, many targets run on the one
Dask runner (``workflows.parallel``): a local cluster of single-threaded
worker processes, or an existing scheduler (``address``). The trace and its
host records travel to each worker once; each worker builds the graph once.
Machines do not travel (they hold read-only mappings): each worker loads the
spec again and applies the parameters, as the client did when it checked
every target before running any. With ``jobs`` None a cluster starts only
when the targets' graph ops add up to ``AUTO_PARALLEL_OPS``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from nodecast.errors import InputError
from nodecast.progress import JobDone
from nodecast.workflows import parallel
from nodecast.workflows.target_nodes import (  # noqa: F401  the target nodes' names, importable from here as before
    MAX_TARGETS,
    SWEEP_KEYS,
    TargetSpec,
    apply_params,
    parse_sweep,
    split_targets,
    target_machine,
    target_specs,
    with_gpu_count,
)

if TYPE_CHECKING:
    from nodecast.traces.api import ApiCalls
    from nodecast.cost.change import Change
    from nodecast.cost.ops import CostOptions
    from nodecast.workflows.forecast import ForecastResult
    from nodecast.graph.opgraph import OpGraph
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

#: Forecasting ops (graph ops x targets) from which a sweep without --jobs starts a local cluster:
#: a cluster takes seconds to start, about what one process forecasts of 5 M graph ops.
AUTO_PARALLEL_OPS = 5_000_000

#: What to do when ``--cluster`` names no scheduler (as the forecast has always said it; ``simulate`` adds
#: "on each node").
CONNECT_HINT = "Start one ('dask scheduler', then 'dask worker ADDRESS') or leave --cluster out"


@dataclass
class Comparison:
    """Forecasts of one trace on several targets: one row per target (``table()``), notes per target."""

    trace: str
    source: str
    measured_end_to_end_s: float
    replayed_end_to_end_s: float
    measured_busy_s: dict[int, float]
    rows: list[dict[str, Any]]
    notes: dict[str, list[str]] = field(default_factory=dict)
    specs: list[TargetSpec] = field(default_factory=list)  # the targets, in the rows' order (empty: not known)
    source_machine: Machine | None = None  # the node A, as loaded (None: not known)
    #: The replay on A split along its critical path (``path_split``: path_gpu_s, path_host_s, path_other_s).
    source_path_s: dict[str, float] = field(default_factory=dict)
    #: The row of the unchanged case (``unchanged_row``: every op at its time on A; empty: not known).
    unchanged: dict[str, Any] = field(default_factory=dict)
    #: Per target label: what B kept of A and what it changed (``cost.change.Change``; one line each).
    changes: dict[str, Change] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """Per target: end-to-end forecast with its interval, change vs A, GPU-busy, GPU time, critical path."""
        return pd.DataFrame(self.rows)

    def table_with_unchanged(self) -> pd.DataFrame:
        """``table()`` with the unchanged case first (``UNCHANGED``: every op at its time on A, replayed), so that
        a reader sees at once whether the models moved the answer; ``table()`` when it is not known."""
        if not self.unchanged:
            return self.table()
        return pd.DataFrame([self.unchanged, *self.rows])

    def change_lines(self, most: int = 6) -> list[str]:
        """What each target kept of A and changed (``cost.change``): one line for all when they say the same,
        else ``target: line`` for the first ``most`` targets and a count of the others (the JSON has them all)."""
        texts = {label: change.text for label, change in self.changes.items()}
        if not texts:
            return []
        if len(set(texts.values())) == 1:
            text = next(iter(texts.values()))
            return [f"every target: {text}" if len(texts) > 1 else text]
        lines = [f"{label}: {text}" for label, text in list(texts.items())[:most]]
        if len(texts) > most:
            lines.append(f"... and {len(texts) - most:,} more targets (--json: changes)")
        return lines

    def intervals(self, table: pd.DataFrame | None = None) -> pd.DataFrame:
        """Per target (per row of ``table``, default ``table()``), the end-to-end interval on B (``low_s``,
        ``high_s``): NaN where no model gave one, so that a table tells "no interval" (—) from one of zero width
        (both ends printed)."""
        table = self.table() if table is None else table
        has = table["has_interval"] if "has_interval" in table else table["low_s"] != table["high_s"]
        return table[["low_s", "high_s"]].where(has.astype(bool), float("nan"))

    def headline(self, most: int = 6) -> list[Number]:
        """End to end measured on A, then forecast per target with its interval (the fastest and the slowest
        target when there are more than ``most``), then the speed-up A / B of the fastest target."""
        from nodecast.headline import Number
        from nodecast.speedup import MEANING, SPEEDUP

        out = [Number(f"end to end, measured on {self.source} (A)", self.measured_end_to_end_s, "s")]
        rows = self.rows
        if len(rows) > most:
            order = sorted(rows, key=lambda r: r["end_to_end_s"])
            rows = [order[0], order[-1]]
        for row in rows:
            which = "" if len(rows) == len(self.rows) else (
                "fastest, " if row is rows[0] else "slowest, ")
            has = row.get("has_interval", row["low_s"] != row["high_s"])  # zero width is an interval too
            out.append(Number(f"end to end, forecast on {row['target']} ({which}B)", row["end_to_end_s"], "s",
                              row["low_s"] if has else None, row["high_s"] if has else None))
        timed = [r for r in self.rows if not math.isnan(r["speedup"])]
        if timed:
            best = max(timed, key=lambda r: r["speedup"])
            which = " (the fastest target)" if len(self.rows) > 1 else ""
            out.append(Number(f"{SPEEDUP} on {best['target']}{which}, {MEANING}", best["speedup"], "x"))
        return out

    def common_notes(self) -> list[str]:
        """Notes every target shares (said once), in first-seen order."""
        if not self.notes:
            return []
        lists = list(self.notes.values())
        return [n for n in lists[0] if all(n in other for other in lists[1:])]


def path_split(end_to_end_s: float, breakdown_s: dict[str, float]) -> dict[str, float]:
    """A critical path (category -> seconds) split into GPU work, host work and the rest (launch and dependency
    waits): ``path_gpu_s``, ``path_host_s``, ``path_other_s`` (the rest of ``end_to_end_s``)."""
    gpu = sum(v for k, v in breakdown_s.items() if k.startswith(("kernels", "copies", "memsets")))
    host = sum(v for k, v in breakdown_s.items() if k.startswith("host"))
    return {"path_gpu_s": gpu, "path_host_s": host, "path_other_s": end_to_end_s - gpu - host}


def source_split(result: ForecastResult) -> dict[str, float]:
    """``path_split`` of the replay on A (the same for every target of one trace and source)."""
    return path_split(result.replayed_end_to_end_s, result.source_path.breakdown_s)


def summary_row(label: str, result: ForecastResult) -> dict[str, Any]:
    """The comparison-table row of one forecast (plain values)."""
    low, high = result.interval_s
    e2e = result.end_to_end_s
    busy = result.busy_s()
    cats = result.categories()
    path = result.target_path.breakdown_s

    def cat_sum(prefix: str) -> float:
        return float(cats.loc[cats["category"].str.startswith(prefix), "target_s"].sum())

    row: dict[str, Any] = {
        "target": label,
        "end_to_end_s": e2e,
        "low_s": low,
        "high_s": high,
        "has_interval": bool(result.costs.has_interval),  # False: low_s = high_s = the forecast, no interval
        "speedup": result.speedup,
        "gpu_busy_s": float(sum(busy["forecast on B"].values())),
        "kernels_s": cat_sum("kernels"),
        "copies_s": cat_sum("copies"),
        "memsets_s": cat_sum("memsets"),
        **path_split(e2e, path),
    }
    row["kept_ops"] = int(result.costs.kept(result.graph).sum())
    return row


def unchanged_row(result: ForecastResult) -> dict[str, Any]:
    """The comparison-table row of the unchanged case (``UNCHANGED``): every op at its time on A, the graph
    replayed, which is also what a target equal to A gives (the models' ratio B/A is 1). Its speed-up is measured
    on A / replayed on A; it has no interval, and no op kept for want of a model (NaN)."""
    from nodecast.cost.change import UNCHANGED
    from nodecast.workflows.forecast import REPLAYED
    from nodecast.speedup import speedup as time_ratio

    cats = result.categories()

    def cat_sum(prefix: str) -> float:
        return float(cats.loc[cats["category"].str.startswith(prefix), "source_s"].sum())

    e2e = result.replayed_end_to_end_s
    return {"target": UNCHANGED, "end_to_end_s": e2e, "low_s": float("nan"), "high_s": float("nan"),
            "has_interval": False, "speedup": time_ratio(result.measured_end_to_end_s, e2e),
            "gpu_busy_s": float(sum(result.busy_s()[REPLAYED].values())), "kernels_s": cat_sum("kernels"),
            "copies_s": cat_sum("copies"), "memsets_s": cat_sum("memsets"), **source_split(result),
            "kept_ops": float("nan")}


def comparison_of(results: Sequence[tuple[str, ForecastResult]]) -> Comparison:
    """A Comparison of forecasts already made (``(label, result)``, one trace and source node)."""
    first = results[0][1]
    return Comparison(trace=first.graph.source, source=first.source.name,
                      measured_end_to_end_s=first.measured_end_to_end_s,
                      replayed_end_to_end_s=first.replayed_end_to_end_s,
                      measured_busy_s=first.busy_s()["measured on A"],
                      rows=[summary_row(label, r) for label, r in results],
                      notes={label: r.notes for label, r in results}, source_path_s=source_split(first),
                      unchanged=unchanged_row(first),
                      changes={label: r.change for label, r in results if r.change is not None})


#: Worker-process cache of built graphs, by a token the client draws per comparison.
_GRAPHS: dict[str, Any] = {}


def _forecast_one(spec: TargetSpec, trace: Trace, api: ApiCalls, source_spec: str | None, allow: bool,
                  options: CostOptions | None, copy_engines: int | None, token: str,
                  graph: OpGraph | None = None) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """One target's row, notes and source-side values (runs in this process or on a Dask worker)."""
    from nodecast.graph.build import build
    from nodecast.workflows.forecast import forecast
    from nodecast.machines import resolve_source

    if graph is None:
        if token not in _GRAPHS:
            _GRAPHS.clear()  # one comparison at a time per worker
            _GRAPHS[token] = build(trace, api, copy_engines_per_direction=copy_engines)
        graph = _GRAPHS[token]
    source = resolve_source(trace, source_spec, allow)
    result = forecast(trace, api, source, spec.load(source), options, graph=graph)
    base = {"source": source.name, "measured_end_to_end_s": result.measured_end_to_end_s,
            "replayed_end_to_end_s": result.replayed_end_to_end_s,
            "measured_busy_s": result.busy_s()["measured on A"], "source_path_s": source_split(result),
            "unchanged": unchanged_row(result), "change": result.change}
    return summary_row(spec.label, result), result.notes, base


def compare_targets(trace: Trace, api: ApiCalls, specs: Sequence[TargetSpec], *, source: str | None = None,
                    allow_gpu_mismatch: bool = False, options: CostOptions | None = None,
                    copy_engines_per_direction: int | None = None, jobs: int | None = None,
                    address: str | None = None, progress: JobDone | None = None) -> Comparison:
    """Forecast ``trace`` on every target of ``specs``; one row per target, in the order given.

    ``source``: the --from spec (None: from the trace's GPU name). Every
    target is loaded and checked before any forecast runs. ``jobs``:
    forecasts at once on a local Dask cluster (1: in this process);
    ``address``: a running Dask scheduler. Both need Dask (the ``parallel``
    extra): without it they are an InputError before any work, and the
    automatic choice (``jobs`` None) runs here. ``progress`` is called with
    each finished target's index.
    """
    from nodecast.graph.build import build
    from nodecast.machines import resolve_source

    if jobs is not None and jobs < 1:
        raise InputError(f"must be at least 1 (got {jobs})", key="--jobs")
    if not specs:
        raise InputError("no target machine", key="--to")
    if address is not None or ((jobs or 1) > 1 and len(specs) > 1):
        parallel.require_dask(address)
    source_machine = resolve_source(trace, source, allow_gpu_mismatch)
    for spec in specs:  # every spec and parameter checked up front: a bad one fails before any work
        spec.load(source_machine)
    graph = build(trace, api, copy_engines_per_direction=copy_engines_per_direction)
    options = _with_chain(options)
    if jobs is None:  # without Dask (the 'parallel' extra), one at a time here
        jobs = _default_jobs() if len(graph) * len(specs) >= AUTO_PARALLEL_OPS and _has_dask() else 1
    token = uuid.uuid4().hex
    args = (trace, api, source, allow_gpu_mismatch, options, copy_engines_per_direction, token)
    if parallel.runs_here(jobs, len(specs), address):
        out = parallel.run_here(lambda i: _forecast_one(specs[i], *args, graph=graph), len(specs), progress)
    else:
        out = _on_dask(specs, args, min(jobs, len(specs)), address, progress)
    base = out[0][2]
    return Comparison(trace=trace.meta.source, source=base["source"],
                      measured_end_to_end_s=base["measured_end_to_end_s"],
                      replayed_end_to_end_s=base["replayed_end_to_end_s"],
                      measured_busy_s=base["measured_busy_s"], rows=[row for row, _, _ in out],
                      notes={spec.label: notes for spec, (_, notes, _) in zip(specs, out, strict=True)},
                      specs=list(specs), source_machine=source_machine, source_path_s=base["source_path_s"],
                      unchanged=base["unchanged"],
                      changes={spec.label: b["change"] for spec, (_, _, b) in zip(specs, out, strict=True)
                               if b["change"] is not None})


def _with_chain(options: CostOptions | None) -> CostOptions:
    """The options with the model chain resolved here, so that Dask workers run the models this process
    chose (a model registered only in this process is then an error there, not a silent difference)."""
    from nodecast.cost.ops import CostOptions
    from nodecast.models.registry import model_chains

    opts = options or CostOptions()
    names = tuple(name for chain in model_chains(opts.models).values() for name in chain)
    return replace(opts, models=names) if names else opts


def _default_jobs() -> int:
    return parallel.default_jobs()


def _has_dask() -> bool:
    from nodecast import extras

    return extras.installed("distributed")


def _on_dask(specs, args, jobs, address, progress) -> list[tuple[dict[str, Any], list[str], dict[str, Any]]]:
    """The forecasts on the one Dask runner (``workflows.parallel``): the trace and its host records sent to the
    workers once, each worker building the graph once (``_GRAPHS``)."""
    trace, api, *rest = args
    return parallel.run_on_dask(_forecast_one, len(specs), lambda i, sent: (specs[i], *sent["trace"], *rest),
                                shared={"trace": [trace, api]}, jobs=jobs, address=address, progress=progress,
                                name="nodecast-forecast", connect_hint=CONNECT_HINT)
