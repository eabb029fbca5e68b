"""Forecast one trace on several target nodes, or on a sweep over machine parameters, as one table.

Targets are ``TargetSpec``: a machine (catalogue name, machine file or
``GPU[xN][@HOST]`` spec string) and what-if parameters applied to it.
``--to a,b,c`` gives three specs; ``--sweep KEY=V1,V2,...`` (repeatable)
multiplies every ``--to`` machine by the cartesian product of the values:

=================  ===============================================================
key                what it changes on the target Machine
=================  ===============================================================
``link.gen``       generation of the PCIe or NVLink links between every GPU and its
                   CPU socket (PCIe 1-6, NVLink 1-5); a rate the machine file gives
                   by hand on those links (``bandwidth_bps``) is dropped, so that
                   the generation decides it
``link.lanes``     PCIe lanes of those links (1, 2, 4, 8, 12, 16, 32): the width
``link.links``     NVLink links (bricks) of those links
``gpu.count``      number of GPUs: fewer drop the last GPUs and their links; more
                   copy the last GPU with its links to CPU sockets and switches
                   (GPU-to-GPU links are not copied: peer copies go through the host)
``gpu.dram_gbps``  GPU DRAM bandwidth, GB/s (1e9 B/s); a measured DRAM maximum in
                   the machine file is replaced too
``cpu.mem_gbps``   host memory bandwidth per socket, GB/s (pageable copies' staging)
=================  ===============================================================

e.g. ``--to h100-pcie-server --sweep link.gen=3,4,5 --sweep link.lanes=8,16``
forecasts six nodes. A ``--to`` naming a GPU alone (no ``@HOST``) is the
source's node with that GPU (``target_machine``): what it does not name is
the source's. Each forecast shares the trace's OpGraph (built once);
only the costs and the replay run per target.

Running on Dask: like ``simulate``'s sweeps (``nodecast.workflows.simulate_sweep``), many
targets run on a local Dask cluster of single-threaded worker processes, or
on an existing scheduler (``address``). The trace and its host records
travel to each worker once; each worker builds the graph once. Machines do
not travel (they hold read-only mappings): each worker loads the spec again
and applies the parameters, as the client did when it checked every target
before running any. With ``jobs`` None a cluster starts only when the
targets' graph ops add up to ``AUTO_PARALLEL_OPS``.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from nodecast.errors import InputError
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.traces.api import ApiCalls
    from nodecast.cost.change import Change
    from nodecast.cost.ops import CostOptions
    from nodecast.workflows.forecast import ForecastResult
    from nodecast.graph.opgraph import OpGraph
    from nodecast.machines.schema import Link, Machine
    from nodecast.traces.trace import Trace

#: Sweep keys and the values each accepts (checked before anything runs).
SWEEP_KEYS = {
    "link.gen": "a PCIe generation 1-6 or an NVLink generation 1-5",
    "link.lanes": "PCIe lanes: 1, 2, 4, 8, 12, 16 or 32",
    "link.links": "NVLink links: 1-18",
    "gpu.count": "GPUs: 1-72",
    "gpu.dram_gbps": "GB/s > 0",
    "cpu.mem_gbps": "GB/s > 0",
}
_INTEGER_KEYS = ("link.gen", "link.lanes", "link.links", "gpu.count")
#: Forecasting ops (graph ops x targets) from which a sweep without --jobs starts a local cluster:
#: a cluster takes seconds to start, about what one process forecasts of 5 M graph ops.
AUTO_PARALLEL_OPS = 5_000_000
#: Most targets one comparison may hold.
MAX_TARGETS = 1000


@dataclass(frozen=True)
class TargetSpec:
    """A target node: a machine spec and what-if parameters ``((key, value), ...)``."""

    machine: str
    params: tuple[tuple[str, float], ...] = ()

    @property
    def label(self) -> str:
        """``machine`` or ``machine[key=value,...]``."""
        if not self.params:
            return self.machine
        return f"{self.machine}[{','.join(f'{k}={_fmt(v)}' for k, v in self.params)}]"

    def load(self, source: Machine | None = None) -> Machine:
        """The Machine of the spec with the parameters applied (InputError on a bad spec or value); a spec naming
        a GPU only is ``source``'s node with that GPU when ``source`` is given (``target_machine``)."""
        machine = target_machine(self.machine, source)
        return apply_params(machine, self.params) if self.params else machine


def target_machine(spec: str, source: Machine | None = None) -> Machine:
    """The node a ``--to`` spec names, given the source node A.

    A spec naming a GPU only (a sheet key or device name, ``xN`` allowed, no
    ``@HOST``: ``machines.compose.gpu_only_spec``) is A's node with that GPU
    (``machines.compose.with_gpu``): A's host, host copy rate and 1-byte costs
    are kept, only the GPUs and their host links change (``xN``: N GPUs, as
    ``gpu.count`` does). Anything else, or any spec without ``source``, is
    ``machines.load_machine``'s: a catalogue node, a machine file, or
    ``GPU[xN]@HOST``, which changes the host too.
    """
    from nodecast.machines import load_machine
    from nodecast.machines.compose import gpu_only_spec, node_name, with_gpu

    only = gpu_only_spec(spec) if source is not None else None
    if only is None:
        return load_machine(spec)
    sheet, count = only
    machine = with_gpu(source, sheet)  # type: ignore[arg-type]
    if count is not None and count != machine.gpu.count:
        machine = with_gpu_count(machine, count)
        machine = replace(machine, name=node_name(sheet, count, source),  # type: ignore[arg-type]
                          notes=(*machine.notes, f"{plural(count, 'GPU')} (--to {spec}), A has "
                                                 f"{source.gpu.count}"))  # type: ignore[union-attr]
    return machine


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def parse_sweep(texts: Sequence[str]) -> list[tuple[tuple[str, float], ...]]:
    """``["link.gen=3,4", "gpu.count=1,2"]`` -> the cartesian product of the values (one tuple per node)."""
    axes: list[list[tuple[str, float]]] = []
    seen: set[str] = set()
    for text in texts:
        key, sep, values = (part.strip() for part in text.partition("="))
        if not sep or not key or not values:
            raise InputError(f"expected KEY=V1,V2,..., got {text!r}", key="--sweep",
                             hint=f"Keys: {', '.join(SWEEP_KEYS)}; e.g. --sweep link.gen=3,4,5")
        if key not in SWEEP_KEYS:
            raise InputError(f"unknown key {key!r}", key="--sweep", hint=f"Keys: {', '.join(SWEEP_KEYS)}")
        if key in seen:
            raise InputError(f"{key} is given twice", key="--sweep", hint="Give all its values in one --sweep")
        seen.add(key)
        axis = []
        for item in values.split(","):
            item = item.strip()
            try:
                v = float(item)
            except ValueError:
                raise InputError(f"{key}: {item!r} is not a number ({SWEEP_KEYS[key]})", key="--sweep") from None
            if not math.isfinite(v) or v <= 0 or (key in _INTEGER_KEYS and not v.is_integer()):
                raise InputError(f"{key}: {item!r} is out of range ({SWEEP_KEYS[key]})", key="--sweep")
            axis.append((key, v))
        axes.append(axis)
    return [tuple(combo) for combo in itertools.product(*axes)] if axes else [()]


def target_specs(machines: Sequence[str], sweeps: Sequence[str] = ()) -> list[TargetSpec]:
    """Every --to machine times every sweep combination, in that order."""
    if not machines:
        raise InputError("no target machine", key="--to", hint="Give --to MACHINE[,MACHINE...]")
    combos = parse_sweep(sweeps)
    specs = [TargetSpec(m, combo) for m in machines for combo in combos]
    if len(specs) > MAX_TARGETS:
        raise InputError(f"{len(specs):,} targets (at most {MAX_TARGETS:,})", key="--sweep",
                         hint="Sweep fewer values at once")
    return specs


def split_targets(text: str) -> list[str]:
    """``--to a,b,c`` -> ``["a", "b", "c"]`` (an existing file whose name holds a comma stays whole)."""
    from nodecast.paths import names_a_file

    if names_a_file(text):
        return [text]
    names = [t.strip() for t in text.split(",")]
    if not all(names):
        raise InputError(f"empty machine name in {text!r}", key="--to", hint="e.g. --to a100-pcie-40gb,h100-pcie-80gb")
    return list(dict.fromkeys(names))


# -- what-if parameters ------------------------------------------------------------------------

def apply_params(machine: Machine, params: Sequence[tuple[str, float]]) -> Machine:
    """``machine`` with the sweep parameters applied (see the module docstring), its notes saying so."""
    notes = list(machine.notes)
    for key, value in params:
        if key == "gpu.count":
            machine = with_gpu_count(machine, int(value))
        elif key == "gpu.dram_gbps":
            machine = _with_dram(machine, value * 1e9)
        elif key == "cpu.mem_gbps":
            machine = replace(machine, cpu=replace(machine.cpu, memory_bandwidth_bps=value * 1e9))
        else:
            machine, extra = _with_host_links(machine, key, int(value))
            notes += extra
        notes.append(f"what-if on {machine.name}: {key} = {_fmt(value)}")
    label = ",".join(f"{k}={_fmt(v)}" for k, v in params)
    return replace(machine, name=f"{machine.name}[{label}]", notes=tuple(notes))


def _host_link_ids(machine: Machine) -> set[str]:
    ids: set[str] = set()
    for g in range(machine.gpu.count):
        ids.update(link.id for link in machine.host_route(g))
    return ids


def _with_host_links(machine: Machine, key: str, value: int) -> tuple[Machine, list[str]]:
    from nodecast.machines.topology import NVLINK_BPS_PER_LINK, PCIE_GT_PER_S

    field_ = key.split(".", 1)[1]
    kinds = {"gen": ("pcie", "nvlink"), "lanes": ("pcie",), "links": ("nvlink",)}[field_]
    ids = _host_link_ids(machine)
    links: list[Link] = []
    changed = 0
    overridden = []
    for link in machine.links:
        if link.id in ids and link.kind in kinds:
            if field_ == "gen":
                known = PCIE_GT_PER_S if link.kind == "pcie" else NVLINK_BPS_PER_LINK
                if value not in known:
                    raise InputError(f"{key}: no {link.kind} generation {value} (known: {min(known)}-{max(known)})",
                                     key="--sweep")
            if field_ == "lanes" and value not in (1, 2, 4, 8, 12, 16, 32):
                raise InputError(f"{key}: PCIe links have 1, 2, 4, 8, 12, 16 or 32 lanes (got {value})", key="--sweep")
            if field_ == "links" and not 1 <= value <= 18:
                raise InputError(f"{key}: 1 to 18 NVLink links (got {value})", key="--sweep")
            if link.bandwidth_bps is not None:
                overridden.append(link.id)
            link = replace(link, **{field_: value, "bandwidth_bps": None})
            changed += 1
        links.append(link)
    if not changed:
        present = sorted({lk.kind for lk in machine.links if lk.id in ids})
        raise InputError(f"{key}: {machine.name} has no {' or '.join(kinds)} link between a GPU and its CPU "
                         f"(its host links are {', '.join(present) or 'none'})", key="--sweep",
                         hint="Sweep a key its links have, or pick another --to machine")
    notes = [f"what-if on {machine.name}: the hand-given rate of link(s) {', '.join(overridden)} dropped so that "
             f"{key} decides it"] if overridden else []
    return replace(machine, links=tuple(links)), notes


def _with_dram(machine: Machine, bps: float) -> Machine:
    from nodecast.machines.schema import MemoryLevel

    levels = dict(machine.gpu.levels)
    old = levels.get("dram", MemoryLevel())
    levels["dram"] = MemoryLevel(bandwidth_bps=bps, size_bytes=old.size_bytes)
    machine = replace(machine, gpu=replace(machine.gpu, levels=levels))
    m = machine.measured
    if m is not None and "dram" in m.gpu_level_bandwidth_bps:
        measured = dict(m.gpu_level_bandwidth_bps)
        measured["dram"] = bps
        machine = replace(machine, measured=replace(m, gpu_level_bandwidth_bps=measured))
    return machine


def with_gpu_count(machine: Machine, count: int) -> Machine:
    """``machine`` with ``count`` GPUs (see ``gpu.count`` in the module docstring)."""
    n = machine.gpu.count
    if not 1 <= count <= 72:
        raise InputError(f"gpu.count: 1 to 72 GPUs (got {count})", key="--sweep")
    if count == n:
        return machine
    gpu_ep = {f"gpu{i}" for i in range(n)}
    if count < n:
        gone = {f"gpu{i}" for i in range(count, n)}
        links = tuple(lk for lk in machine.links if not set(lk.endpoints) & gone)
        gpu = replace(machine.gpu, count=count, cpu_socket=machine.gpu.cpu_socket[:count])
        return replace(machine, gpu=gpu, links=links)
    last = f"gpu{n - 1}"
    own = [lk for lk in machine.links if last in lk.endpoints and not (set(lk.endpoints) - {last}) & gpu_ep]
    links = list(machine.links)
    for k in range(n, count):
        for lk in own:
            a, b = (f"gpu{k}" if e == last else e for e in lk.endpoints)
            links.append(replace(lk, id=f"{lk.id}-gpu{k}", endpoints=(a, b)))
    sockets = machine.gpu.cpu_socket + (machine.gpu.cpu_socket[-1],) * (count - n)
    return replace(machine, gpu=replace(machine.gpu, count=count, cpu_socket=sockets), links=tuple(links))


# -- running ---------------------------------------------------------------------------------------

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
    #: Per target label: what B kept of A and what it changed (``graph.change.Change``; one line each).
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
        """What each target kept of A and changed (``graph.change``): one line for all when they say the same,
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
                    address: str | None = None, progress: Callable[[int], None] | None = None) -> Comparison:
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
        from nodecast.workflows.simulate_sweep import require_dask

        require_dask(address)
    source_machine = resolve_source(trace, source, allow_gpu_mismatch)
    for spec in specs:  # every spec and parameter checked up front: a bad one fails before any work
        spec.load(source_machine)
    graph = build(trace, api, copy_engines_per_direction=copy_engines_per_direction)
    options = _with_chain(options)
    if jobs is None:  # without Dask (the 'parallel' extra), one at a time here
        jobs = _default_jobs() if len(graph) * len(specs) >= AUTO_PARALLEL_OPS and _has_dask() else 1
    token = uuid.uuid4().hex
    args = (trace, api, source, allow_gpu_mismatch, options, copy_engines_per_direction, token)
    if address is None and (jobs == 1 or len(specs) == 1):
        out = []
        for i, spec in enumerate(specs):
            out.append(_forecast_one(spec, *args, graph=graph))
            if progress is not None:
                progress(i)
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
    from nodecast.cost.ops import CostOptions, model_chains

    opts = options or CostOptions()
    names = tuple(name for chain in model_chains(opts.models).values() for name in chain)
    return replace(opts, models=names) if names else opts


def _default_jobs() -> int:
    from nodecast.workflows.simulate_sweep import default_jobs

    return default_jobs()


def _has_dask() -> bool:
    from nodecast import extras

    return extras.installed("distributed")


def _on_dask(specs, args, jobs, address, progress) -> list[tuple[dict[str, Any], list[str], dict[str, Any]]]:
    """Run the forecasts on Dask with simulate's cluster settings (``nodecast.workflows.simulate_sweep``)."""
    import dask
    import distributed  # noqa: F401  NOTE: loads its config defaults before they are overridden

    from nodecast.workflows import simulate_sweep as sweep

    with dask.config.set(sweep._QUIET_WORKERS if address is None else {}):
        from distributed import Client, LocalCluster, as_completed

        cluster = None
        if address is None:
            with sweep._workers_ignore_ctrl_c():
                cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
            client = Client(cluster)
        else:
            try:
                client = Client(address, timeout=sweep._CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError(f"cannot reach a Dask scheduler at {address!r} ({exc})", key="--cluster",
                                 hint="Start one ('dask scheduler', then 'dask worker ADDRESS') or leave --cluster out"
                                 ) from None
        try:
            trace, api, *rest = args
            shared = client.scatter([trace, api], broadcast=True)
            futures = [client.submit(_forecast_one, spec, *shared, *rest, pure=False,
                                     key=f"nodecast-forecast-{i}-{uuid.uuid4().hex}") for i, spec in enumerate(specs)]
            index = {f.key: i for i, f in enumerate(futures)}
            results: list[Any] = [None] * len(specs)
            for fut in as_completed(futures):
                i = index[fut.key]
                results[i] = fut.result()
                if progress is not None:
                    progress(i)
            return results
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
