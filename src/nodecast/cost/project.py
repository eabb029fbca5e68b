"""Apply every registered model to a trace: per-op projected times on the target.

The projector knows no model by name (see ``nodecast.models.registry``): it runs
each registered model (or those chosen) over the whole trace and keeps their
results side by side. Ops that no model handles are reported, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast import notes as nn
from nodecast.machines.compose import node_notes
from nodecast.machines.schema import Machine
from nodecast.models.base import Model, ModelResult
from nodecast.models.collective import collective_mask
from nodecast.models.one_byte import check_given
from nodecast.models.registry import all_models, default_models, get_models
from nodecast.notes import from_, records, retold
from nodecast.headline import Number
from nodecast.units import fmt_seconds
from nodecast.words import plural
from nodecast.traces.kinds import OpKind, TransferClass
from nodecast.traces.trace import Trace

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nodecast.traces.ncu import KernelMetrics

_CLASS_KEYS = np.array([c.key for c in TransferClass], dtype=object)
_KIND_KEYS = np.array([k.name.lower() for k in OpKind], dtype=object)


#: ``Projection.summary`` rows: the ops some model projected, and those none did.
TOTAL_PROJECTED = "total projected"
NOT_PROJECTED = "not projected"


def op_category(trace: Trace) -> np.ndarray:
    """Per-op row label of summaries: the transfer class for copies, else the op kind."""
    cls = trace.transfer_class
    return np.where(cls > 0, _CLASS_KEYS[cls], _KIND_KEYS[trace["kind"]])


@dataclass
class Projection:
    """Projected GPU times of one trace on a target machine, per model.

    ``results[name].time_s`` is aligned with the trace's rows (NaN: not handled).
    """

    trace: Trace
    source: Machine
    target: Machine
    models: list[Model]
    results: dict[str, ModelResult]
    notes: list[str] = field(default_factory=list)
    idle: dict[str, str] = field(default_factory=dict)  # model -> why it projected nothing

    @property
    def source_s(self) -> np.ndarray:
        """Measured GPU time of every op on the source node, seconds."""
        return self.trace.duration_ns.astype(np.float64) * 1e-9

    @property
    def handled_by_any(self) -> np.ndarray:
        """Ops at least one model projected."""
        mask = np.zeros(len(self.trace), dtype=bool)
        for r in self.results.values():
            mask |= r.handled
        return mask

    def all_notes(self) -> list[str]:
        """How the machines were picked (a host both share and that was assumed said once), then the models'
        notes; those about an assumption weighed by the GPU time on A of the ops it covers, over the projected ops
        (``weigh_notes``)."""
        notes = [*node_notes(self.source, self.target), *from_(self.notes, "models")]
        return weigh_notes(notes, self, np.flatnonzero(self.handled_by_any), "projected ops")

    def headline(self) -> list[Number]:
        """Per kind of op the models project (transfers, kernels): its GPU time on B by the first model of
        ``nodecast forecast``'s chain that projected all of them, the other such models' totals as the interval."""
        out = []
        for kind in dict.fromkeys(m.kind for m in self.models):
            names = [m.name for m in self.models if m.kind == kind]
            rows = np.zeros(len(self.trace), dtype=bool)
            for name in names:
                rows |= self.results[name].handled
            full = [n for n in names if self.results[n].handled[rows].all()]
            if not full:
                continue
            chain = [n for n in default_models(kind) if n in full]
            main = chain[0] if chain else full[0]
            totals = {n: float(self.results[n].time_s[rows].sum()) for n in full}
            on_a = float(self.source_s[rows].sum())
            out.append(Number(f"{kind} GPU time on {self.target.name} (B), {main}", totals[main], "s",
                              min(totals.values()) if len(full) > 1 else None,
                              max(totals.values()) if len(full) > 1 else None,
                              f"{plural(int(rows.sum()), 'op')}, {fmt_seconds(on_a)} on {self.source.name} (A)"
                              + (f"; interval: the totals of {', '.join(n for n in full if n != main)}"
                                 if len(full) > 1 else "")))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Every value as plain Python (JSON-ready; seconds, bytes)."""
        return {"trace": self.trace.meta.source, "format": self.trace.meta.format, "source": self.source.name,
                "target": self.target.name, "models": [m.name for m in self.models], "summary": self.summary(),
                "unhandled": self.unhandled(), "idle": dict(self.idle), "notes": records(self.all_notes())}

    def unhandled(self) -> pd.DataFrame:
        """Ops no model could handle, grouped by category: count and source GPU time."""
        in_scope = self.trace["kind"] != OpKind.SYNC  # syncs are not work to project
        miss = in_scope & ~self.handled_by_any
        cats = op_category(self.trace)[miss]
        df = pd.DataFrame({"category": cats, "source_s": self.source_s[miss]})
        out = df.groupby("category", sort=True).agg(ops=("source_s", "size"), source_s=("source_s", "sum"))
        return out.reset_index()

    def frame(self) -> pd.DataFrame:
        """One row per op (syncs excluded), the models' projected times side by side."""
        t = self.trace
        keep = t["kind"] != OpKind.SYNC
        data: dict[str, object] = {
            "op": np.flatnonzero(keep),
            "kind": _KIND_KEYS[t["kind"][keep]],
            "transfer_class": _CLASS_KEYS[t.transfer_class[keep]],
            "bytes": t["bytes"][keep],
            "device": t["device"][keep],
            "stream": t["stream"][keep],
            "correlation": t["correlation"][keep],
            "start_ns": t["start_ns"][keep],
            "source_s": self.source_s[keep],
        }
        for name, r in self.results.items():
            data[f"{name}_s"] = r.time_s[keep]
            if r.low_s is not None and r.high_s is not None:
                data[f"{name}_low_s"] = r.low_s[keep]
                data[f"{name}_high_s"] = r.high_s[keep]
        df = pd.DataFrame(data)
        df.insert(3, "name", t.kernel_names()[keep])
        return df

    def summary(self) -> pd.DataFrame:
        """Per category, then ``TOTAL_PROJECTED`` and ``NOT_PROJECTED``: ops, bytes, source time, time per model.

        The ``TOTAL_PROJECTED`` row covers the ops at least one model
        projected, so its source time and the models' sums are over the same
        ops; the ops no model projected are the ``NOT_PROJECTED`` row (source
        time only), present only when there are some. A model's sum covers
        only the ops it handled; ``<model>_ops`` says how many that is, so a
        partial sum is never mistaken for a full one.
        """
        cats = op_category(self.trace)
        keep = self.trace["kind"] != OpKind.SYNC
        projected = self.handled_by_any[keep]
        df = pd.DataFrame({"category": cats[keep], "bytes": self.trace["bytes"][keep],
                           "source_s": self.source_s[keep]})
        for name, r in self.results.items():
            df[f"{name}_s"] = r.time_s[keep]
            df[f"{name}_ops"] = r.handled[keep]
        agg = {"ops": ("source_s", "size"), "bytes": ("bytes", "sum"), "source_s": ("source_s", "sum")}
        for name in self.results:
            agg[f"{name}_s"] = (f"{name}_s", "sum")  # pandas sum skips NaN
            agg[f"{name}_ops"] = (f"{name}_ops", "sum")
        by_cat = df.groupby("category", sort=True).agg(**agg).reset_index()

        def row(label: str, sel: np.ndarray) -> dict[str, object]:
            part = df[sel]
            out: dict[str, object] = {"category": label, "ops": len(part), "bytes": part["bytes"].sum(),
                                      "source_s": part["source_s"].sum()}
            for name in self.results:
                out[f"{name}_s"] = part[f"{name}_s"].sum()
                out[f"{name}_ops"] = part[f"{name}_ops"].sum()
            return out

        rows = [row(TOTAL_PROJECTED, projected)]
        if not projected.all():
            rows.append(row(NOT_PROJECTED, ~projected))
        out = pd.concat([by_cat, pd.DataFrame(rows, columns=by_cat.columns)], ignore_index=True)
        for name in self.results:  # a sum over no op is "not projected", not 0 s
            out.loc[out[f"{name}_ops"] == 0, f"{name}_s"] = np.nan
        return out


@dataclass
class ModelList:
    """The registered models (``nodecast models``): projection models, then the simulator's task-kernel models."""

    models: list[Model]

    def table(self) -> pd.DataFrame:
        """One row per model: name, kind of op, baseline or not, what it does."""
        return pd.DataFrame([{"model": m.name, "kind": m.kind, "baseline": "yes" if m.baseline else "",
                              "description": m.description} for m in self.models],
                            columns=["model", "kind", "baseline", "description"])


def model_list() -> ModelList:
    """Every registered model, the simulator's too, in registration order."""
    return ModelList(all_models())


def check_host_memory(host_memory: str | None, option: str = "--host-memory") -> None:
    """InputError unless ``host_memory`` is None or one of ``traces.kinds.HOST_MEMORY_KINDS``."""
    from nodecast.errors import InputError
    from nodecast.traces.kinds import HOST_MEMORY_KINDS

    if host_memory is not None and host_memory not in HOST_MEMORY_KINDS:
        raise InputError(f"unknown host memory kind {host_memory!r}", key=option,
                         hint=f"Give one of: {', '.join(HOST_MEMORY_KINDS)}")


#: Transfer classes of the copies between host and GPU, and of those whose host memory kind is not recorded.
_HOST_COPIES = [c for c in TransferClass if c.name.startswith(("HTOD", "DTOH"))]
_UNKNOWN_HOST = [TransferClass.HTOD_UNKNOWN, TransferClass.DTOH_UNKNOWN]


def weigh_notes(notes: list[str], proj: Projection, rows: np.ndarray, what: str) -> list[str]:
    """``notes`` with those about an assumption weighed (``nodecast.notes``): the GPU time on A of the ops of
    ``rows`` (trace rows; ``what`` they are, "projected ops") that the assumption covers, over that of all
    ``rows``. Per-op answers (each model's time for each op) rest on an assumption in proportion to the time of
    the ops it covers. A host assumed covers the copies between host and GPU; a GPU mismatch every op; unknown
    host memory the copies whose trace omits it; an unknown cache level the kernels of the models that lack it.
    """
    weight = proj.source_s[rows]
    total = float(weight.sum())
    if not total > 0:
        return notes
    cls = proj.trace.transfer_class[rows]
    kernel = proj.trace["kind"][rows] == OpKind.KERNEL

    def levels_unknown() -> np.ndarray:
        mask = np.zeros(len(rows), dtype=bool)
        for r in proj.results.values():
            if any(nn.about(n) == nn.LEVELS_UNKNOWN for n in r.notes):
                mask |= r.handled[rows]
        return mask & kernel

    masks = {nn.HOST_ASSUMED: (lambda: np.isin(cls, _HOST_COPIES), "copies between host and GPU"),
             nn.GPU_MISMATCH: (lambda: np.ones(len(rows), dtype=bool), f"all the {what}"),
             nn.HOST_MEMORY_UNKNOWN: (lambda: np.isin(cls, _UNKNOWN_HOST), "these copies"),
             nn.LEVELS_UNKNOWN: (levels_unknown, "the kernels of these models")}

    def seconds_of(mask: Callable[[], np.ndarray]) -> Callable[[], float]:
        return lambda: float(weight[mask()].sum())

    scopes = {k: (seconds_of(mask), text) for k, (mask, text) in masks.items()}
    return nn.weigh_scoped(notes, scopes, total, f"the GPU time on A of the {what}", fmt_seconds)


def _merge_notes(per_model: dict[str, list[str]]) -> list[str]:
    """One line per distinct note, prefixed by every model that made it (first-seen order)."""
    who: dict[str, list[str]] = {}
    first: dict[str, str] = {}  # the note as its first model made it: what it is about goes with the line
    for name, notes in per_model.items():
        for note in notes:
            who.setdefault(note, []).append(name)
            first.setdefault(note, note)
    return [retold(first[note], f"{', '.join(names)}: {note}") for note, names in who.items()]


def without_collectives(result: ModelResult, trace: Trace) -> ModelResult:
    """A compute-kernel model's answer with the NCCL/RCCL collectives left out (NaN): their time follows the links
    between GPUs, not the SMs, clock or DRAM the kernel models scale by; the collective models time them."""
    coll = collective_mask(trace)
    if not (coll & result.handled).any():
        return result
    keep = lambda a: None if a is None else np.where(coll, np.nan, a)  # noqa: E731
    return ModelResult(result.model, keep(result.time_s), keep(result.low_s), keep(result.high_s), result.notes)


def project(
    trace: Trace,
    source: Machine,
    target: Machine,
    model_names: list[str] | None = None,
    kind: str | None = None,
    metrics: KernelMetrics | None = None,
    one_byte_s: Mapping[str, float] | None = None,
    host_memory: str | None = None,
) -> Projection:
    """Run the chosen (default: all registered) models of ``kind`` over ``trace``.

    ``metrics`` (Nsight Compute, ``nodecast.traces.ncu.read_ncu_csv``) go to
    every model that takes kernel metrics; their rows join the trace's kernel
    rows by name and launch order. ``one_byte_s`` (transfer class key such as
    ``htod_pinned``, or ``"all"`` -> seconds) sets the 1-byte cost L+O of the
    transfer models that use one (``nodecast.models.one_byte`` step 1). Models
    that project no op of this trace are listed in ``Projection.idle`` with
    the reason, not in ``results``. ``host_memory`` (``"pinned"`` or
    ``"pageable"``) states the kind of the host memory of copies whose trace
    does not record it; None projects them both ways (an interval, with a
    note; ``nodecast.models.transfer``).
    """
    given = check_given(one_byte_s)  # checked even when no model uses it: a typo is never ignored
    check_host_memory(host_memory)
    models = get_models(model_names, kind)
    results: dict[str, ModelResult] = {}
    idle: dict[str, str] = {}
    per_model_notes: dict[str, list[str]] = {}
    for model in models:
        if metrics is not None and hasattr(model, "metrics"):
            model.metrics = metrics  # type: ignore[attr-defined]
        if given and hasattr(model, "one_byte_given_s"):
            model.one_byte_given_s = dict(given)  # type: ignore[attr-defined]
        if host_memory is not None and hasattr(model, "host_memory"):
            model.host_memory = host_memory  # type: ignore[attr-defined]
        result = model.project(trace, source, target)
        if model.kind == "kernel":
            result = without_collectives(result, trace)
        if model_names is None and not result.handled.any():
            if getattr(model, "quiet_when_idle", False) and not result.notes:
                continue  # a model of ops this trace does not hold (collectives) says nothing of them
            idle[model.name] = result.notes[0] if result.notes else "no op of this trace is of a kind it models"
            continue
        results[model.name] = result
        per_model_notes[model.name] = result.notes
    notes = _merge_notes(per_model_notes)
    notes += _merge_notes({name: [why] for name, why in idle.items()})
    return Projection(trace, source, target, [m for m in models if m.name in results], results, notes, idle)
