"""One cost interface: every op's duration on the target node, and which model gave it.

``costs(graph, trace, source, target, options)`` returns an ``OpCosts``: per
op of the OpGraph, its duration on the target (seconds), an interval
(``low_s``/``high_s``, equal to the duration where no model gives one), the
model that gave it, and the edge lags and release times the target replay
uses. The replay of ``graph.with_costs(...)`` (``OpCosts.apply``) is the
forecast.

Where each op's time comes from:

GPU ops (kernels, copies, memsets)
    The model registry (``nodecast.models.registry``), run over the source
    Trace by ``nodecast.cost.project.project`` as ``nodecast project`` runs
    it. Per kind of model ("transfer", "kernel"), a *chain* of models is
    tried in order and the first that handles an op gives its time; the
    registry's chain policy (``model_chains``) says which: the ``--models``
    given, in their order, else the registry's default for the kind
    (``DEFAULT_MODELS``: copies ``ahead-scaled``, kernels
    ``default-kernel``), else every registered model of the kind that is not
    a baseline.

    Ops no model handles (memsets, host-to-host copies, kernels without a
    model) keep their measured source time; ``OpCosts.kept`` lists them and
    the model column says ``source``.
Host ops (API calls, the returns of blocking calls)
    Unchanged by default; ``host_scale`` F multiplies every host duration,
    every host gap between calls (PROGRAM_ORDER, NESTING and FLOW lags), the
    gaps the no-API fallback takes as host time (RECORDED_OFFSET lags from an
    op's end) and host threads' release times: F = 0.5 is a host twice as
    fast. GPU ops are never scaled by it. Model column: ``host``.
Calibrated lags
    The launch latency (LAUNCH lags) and the GPU dependency latencies are the
    source trace's calibration (``OpGraph.params``), kept on the target by
    default: machine files carry no launch latency. ``launch_latency_s``
    sets every LAUNCH lag to one value instead.

Units: seconds throughout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.graph.opgraph import Anchor, EdgeKind, OpGraph, OpKind
from nodecast.models.collective import collective_mask
from nodecast.models.registry import get_models, model_chains
from nodecast.notes import HOST_TIME, LATENCY_KEPT, Note, retold
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.models.base import ModelResult
    from nodecast.traces.ncu import KernelMetrics
    from nodecast.traces.trace import Trace

#: Model code of ops kept at their measured source time.
SOURCE = "source"
#: Model code of host ops (unchanged, or scaled by ``host_scale``).
HOST = "host"
#: Largest host scale accepted: 1,000x slower host work is far outside any node comparison.
MAX_HOST_SCALE = 1000.0
#: The op kind each kind of model projects (a model of another kind is run whatever is left).
_OP_KIND_OF = {"kernel": OpKind.KERNEL, "transfer": OpKind.COPY}
#: Host-side edge kinds whose lags are host work (scaled by ``host_scale``).
HOST_EDGES = (EdgeKind.PROGRAM_ORDER, EdgeKind.NESTING, EdgeKind.FLOW)


@dataclass(frozen=True)
class CostOptions:
    """What ``costs`` takes besides the graph and machines (see the module docstring).

    ``models``: model names tried in order per kind (None: the registry's
    choice); ``metrics``: Nsight Compute metrics of the source run's kernels;
    ``one_byte_s``: 1-byte costs per transfer class key (or ``"all"``), s;
    ``host_scale``: factor on host time; ``launch_latency_s``: one launch
    latency for every launch (None: the source's calibration);
    ``host_memory``: ``"pinned"`` or ``"pageable"`` for copies whose trace
    does not record it (None: the transfer models' own choice, an interval;
    ``nodecast.cost.project.project``).
    """

    models: tuple[str, ...] | None = None
    metrics: KernelMetrics | None = None
    one_byte_s: Mapping[str, float] | None = None
    host_scale: float = 1.0
    launch_latency_s: float | None = None
    host_memory: str | None = None

    def check(self) -> CostOptions:
        """The options, or InputError naming the option that is out of range."""
        f = self.host_scale
        if not (np.isfinite(f) and 0 < f <= MAX_HOST_SCALE):
            raise InputError(f"must be a number > 0 and <= {MAX_HOST_SCALE:g} (got {f!r})", key="--host-scale",
                             hint="1 keeps the source's host time; 0.5 is a host twice as fast")
        lat = self.launch_latency_s
        if lat is not None and not (np.isfinite(lat) and 0 <= lat <= 1.0):
            raise InputError(f"must be a number of µs from 0 to 1e6 (got {lat * 1e6!r})", key="--launch-us")
        if self.models is not None and not self.models:
            raise InputError("empty model list", key="--models")
        from nodecast.cost.project import check_host_memory

        check_host_memory(self.host_memory)
        return self


@dataclass
class OpCosts:
    """Per-op durations on the target (seconds) and where each came from.

    ``model[i]`` indexes ``model_names``; ``lag_s`` (per edge, the graph's
    CSR order) and ``release_s`` (per op) are what the target replay uses.
    """

    duration_s: np.ndarray
    low_s: np.ndarray
    high_s: np.ndarray
    model: np.ndarray  # int16 index into model_names
    model_names: list[str]
    lag_s: np.ndarray
    release_s: np.ndarray
    chains: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    results: dict[str, ModelResult] = field(default_factory=dict)  # per model that ran, over the trace's rows

    @property
    def has_interval(self) -> bool:
        """Whether some model gave an interval wider than its point value."""
        return bool(np.any(self.low_s < self.duration_s) or np.any(self.high_s > self.duration_s))

    def model_of(self) -> np.ndarray:
        """Model name of every op (object array)."""
        return np.asarray(self.model_names, dtype=object)[self.model]

    def kept(self, graph: OpGraph) -> np.ndarray:
        """Boolean mask of the GPU ops kept at their source time (no model handled them)."""
        return graph.gpu_mask() & (self.model == self.model_names.index(SOURCE))

    def apply(self, graph: OpGraph) -> OpGraph:
        """The graph with the target's edge lags and release times (same ops, edges and order)."""
        ops = dict(graph.ops)
        ops["release_s"] = self.release_s
        return replace(graph, ops=ops, lag_s=self.lag_s)

    def provenance(self, graph: OpGraph) -> pd.DataFrame:
        """Per model: ops, their time on the source and on the target (s), first the GPU models."""
        # Grouped by the model codes, whose order is that of model_names, and named afterwards (not one text per op).
        df = pd.DataFrame({"model": self.model, "source_s": graph.ops["source_dur_s"], "target_s": self.duration_s},
                          copy=False)
        out = df.groupby("model", sort=True).agg(ops=("source_s", "size"), source_s=("source_s", "sum"),
                                                 target_s=("target_s", "sum"))
        out.index = pd.Index([self.model_names[k] for k in out.index], dtype=object, name="model")
        return out.reset_index()


def costs(graph: OpGraph, trace: Trace, source: Machine, target: Machine,
          options: CostOptions | None = None) -> OpCosts:
    """Duration of every op of ``graph`` (built from ``trace``) on ``target``, seconds (module docstring)."""
    from nodecast.cost.project import project

    opts = (options or CostOptions()).check()
    chains = model_chains(opts.models)
    if not chains.get("collective") or not collective_mask(trace).any():
        chains.pop("collective", None)  # no collective model or no collective: the chain would only say so
    order = [name for chain in chains.values() for name in chain]
    n = len(graph)
    kind = graph.ops["kind"]
    src = graph.ops["source_dur_s"]
    names = [*order, SOURCE, HOST]
    code = np.full(n, names.index(SOURCE), np.int16)
    dur = src.copy()
    low = src.copy()
    high = src.copy()
    notes: list[str] = []
    gpu = np.flatnonzero(kind <= OpKind.MEMSET)
    rows = graph.ops["trace_row"][gpu]
    results: dict[str, ModelResult] = {}
    if order:
        open_ = np.ones(len(gpu), bool)
        gpu_kind = kind[gpu]
        for i, name in enumerate(order):
            # A model runs only while ops of its kind are left: the rest of a chain costs nothing.
            op_kind = _OP_KIND_OF.get(get_models([name])[0].kind)
            if op_kind is not None and not (open_ & (gpu_kind == op_kind)).any():
                continue
            proj = project(trace, source, target, [name], metrics=opts.metrics, one_byte_s=opts.one_byte_s,
                           host_memory=opts.host_memory)
            r = results[name] = proj.results[name]
            t = r.time_s[rows]
            ok = open_ & np.isfinite(t) & (t >= 0)
            bad = int(np.count_nonzero(open_ & r.handled[rows] & ~ok))
            if bad:
                notes.append(f"{name}: {plural(bad, 'op')} given a non-finite or negative time, left to the next model")
            if not ok.any():
                continue
            v = gpu[ok]
            dur[v] = t[ok]
            lo = r.low_s[rows[ok]] if r.low_s is not None else t[ok]
            hi = r.high_s[rows[ok]] if r.high_s is not None else t[ok]
            low[v] = np.where(np.isfinite(lo), np.minimum(lo, t[ok]), t[ok])
            high[v] = np.where(np.isfinite(hi), np.maximum(hi, t[ok]), t[ok])
            code[v] = i
            open_ &= ~ok
        notes.extend(_model_notes(results, order, code[gpu], gpu_kind, chains))
    host = kind >= OpKind.API
    f = opts.host_scale
    code[host] = names.index(HOST)
    for arr in (dur, low, high):
        arr[host] = src[host] * f
    # The target's lags and releases are the graph's own arrays unless host time is scaled or a launch latency
    # given: shared then, not copied (8 B per edge and per op that a forecast would hold twice).
    lag, release = graph.lag_s, graph.ops["release_s"]
    if f != 1.0:
        scaled = np.isin(graph.kind, HOST_EDGES) | ((graph.kind == EdgeKind.RECORDED_OFFSET)
                                                     & (graph.anchor == Anchor.END))
        lag = lag.copy()
        lag[scaled] *= f
        release = release.copy()
        release[host] *= f
        notes.append(Note(f"host time x{f:g} (--host-scale): API calls, sync returns, gaps between calls and the "
                          "no-API fallback's gaps between GPU ops; GPU ops unchanged", HOST_TIME))
    elif host.any() or np.any(graph.kind == EdgeKind.RECORDED_OFFSET):
        # Said even though nothing was done: the host is not modelled, and this is often most of the answer
        # (the forecast weighs the note by the host work on B's critical path, ``workflows.weigh``).
        what = ("API calls, sync returns, gaps between calls" if host.any() else
                "the gaps between GPU ops as recorded: the trace has no host API records")
        notes.append(Note(f"host work kept as measured on A ({what}): nodecast does not model the host, so B's host "
                          "is taken to run it as fast as A's (--host-scale F scales it)", HOST_TIME))
    if opts.launch_latency_s is not None:
        lag = lag.copy() if lag is graph.lag_s else lag
        lag[graph.kind == EdgeKind.LAUNCH] = opts.launch_latency_s
        notes.append(f"launch latency {opts.launch_latency_s * 1e6:g} µs on every launch (given), instead of the "
                     "source trace's calibration")
    elif np.any(graph.kind == EdgeKind.LAUNCH):
        notes.append(Note("launch and GPU dependency latencies kept from the source trace's calibration "
                          "(machine files give none)", LATENCY_KEPT))
    notes.extend(_device_notes(graph, target))
    return OpCosts(dur, low, high, code, names, lag, release, chains, notes, results)


def _model_notes(results: dict[str, ModelResult], order: list[str], code: np.ndarray, gpu_kind: np.ndarray,
                 chains: dict[str, list[str]]) -> list[str]:
    """The notes of the models that gave some op its time (one line per distinct note, naming every
    model that made it), and why the models of a chain that left ops at their source time gave nothing."""
    who: dict[str, list[str]] = {}
    first: dict[str, str] = {}  # the note as its first model made it: what it is about goes with the line
    used = {order[i] for i in np.unique(code) if i < len(order)}
    for name in order:
        if name in used:
            for note in results[name].notes:
                who.setdefault(note, []).append(name)
                first.setdefault(note, note)
    out = [retold(first[note], f"{', '.join(names)}: {note}") for note, names in who.items()]
    kept = code == len(order)
    for kind, chain in chains.items():
        op_kind = _OP_KIND_OF.get(kind)
        n_kept = int(np.count_nonzero(kept & (gpu_kind == op_kind))) if op_kind is not None else 0
        if not n_kept:
            continue
        idle = [f"{name} ({results[name].notes[0]})" if name in results and results[name].notes else name
                for name in chain if name not in used]
        what = "kernels" if kind == "kernel" else "copies"
        its, them = ("its", "it") if n_kept == 1 else ("their", "them")
        if not chain:  # --models named no model of this kind: there is no model to list (never "()")
            asked = f" ({', '.join(order)})" if order else ""
            why = f"none of the models asked for{asked} is a {kind} model"
        elif idle:
            why = f"no {kind} model handles {them} ({'; '.join(idle)})"
        else:
            why = f"the {kind} models ({', '.join(chain)}) handle other {what} only"
        out.append(f"{plural(n_kept, kind + ' op')} kept at {its} source time: {why}")
    return out


def _device_notes(graph: OpGraph, target: Machine) -> list[str]:
    """Say which of the trace's GPUs the target lacks, and what is assumed for them."""
    devices = np.unique(graph.ops["device"][graph.gpu_mask()])
    count = target.gpu.count
    beyond = [int(d) for d in devices if d >= count]
    if not beyond:
        return []
    return [f"the trace has ops on GPU(s) {beyond} and {target.name} has {plural(count, 'GPU')}: device d is "
            f"projected onto target GPU d mod {count}; its streams keep their own queues in the replay, so work "
            "of two source GPUs may overlap on one target GPU as concurrent streams would"]
