"""What a forecast keeps of run A and what it changes, said in one line.

A forecast is only as good as what it moves: the parts of node B that are
A's keep their measured times, the rest move by a model. ``describe`` says
which, for one forecast (``Change.text``, one line), e.g.::

    B is A's node with the GPU changed: NVIDIA GeForce GTX TITAN -> NVIDIA GeForce GTX 970 (host link PCIe gen3
    x16 both); kept as measured: host work, launch latencies, host copy rate, 1-byte costs; moved by the models'
    ratio B/A: copies (ahead-scaled), kernels (default-kernel)

Parts:

* what B is: A's node unchanged; A's node with the GPU (or its host link)
  changed, the host kept (``machines.compose.same_host``); or another node;
* kept as measured: host work (unless ``--host-scale``), the launch and
  dependency latencies (unless ``--launch-us``), the host copy rate (when
  B keeps A's host and the copies move by a ratio: the rate the run
  measured serves both sides), the 1-byte costs of copies (unless B's
  machine file measures its own, or ``--one-byte-us`` sets them), and the
  GPU ops no model handles;
* moved by the models' ratio B/A: per kind of op, the models that gave it its
  time as its time on A times their ratio (``models.base.is_absolute`` is
  False); set by absolute models: those whose time comes from the machines
  alone (``--models ahead``), where A's times are not used.

``machines.compose.node_notes`` gathers the notes of both nodes, saying once a
host A and B share and that was assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nodecast.graph.opgraph import EdgeKind, OpKind, kind_label

if TYPE_CHECKING:
    from nodecast.cost.ops import CostOptions, OpCosts
    from nodecast.graph.opgraph import OpGraph
    from nodecast.machines.schema import Machine

#: How each kind of model's ops are named in the line.
_OPS = {"transfer": "copies", "kernel": "kernels"}
#: The label of the unchanged case in forecast tables: every op at its time on A, replayed.
UNCHANGED = "unchanged (A's times)"


@dataclass(frozen=True)
class Change:
    """What B is to A (``node``), what kept its measured time, and what moved and by which models."""

    node: str
    kept: tuple[str, ...] = ()
    by_ratio: dict[str, list[str]] = field(default_factory=dict)  # ops -> models giving time on A x ratio B/A
    absolute: dict[str, list[str]] = field(default_factory=dict)  # ops -> models giving time from the machines
    given: tuple[str, ...] = ()  # what the user set instead of the measured value
    same: bool = False  # B is A: the ratios are 1

    @property
    def text(self) -> str:
        """The one line: ``B is ...; kept as measured: ...; moved by the models' ratio B/A: ...``."""
        parts = [self.node]
        if self.kept:
            parts.append(f"kept as measured: {', '.join(self.kept)}")
        if self.given:
            parts.append(f"set as given: {', '.join(self.given)}")
        if self.by_ratio:
            parts.append(("the models' ratio B/A is 1 (B is A): " if self.same else "moved by the models' ratio B/A: ")
                         + _models(self.by_ratio))
        if self.absolute:
            parts.append("set by absolute models (from the machines, not A's times): " + _models(self.absolute))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the line and its parts."""
        return {"text": self.text, "node": self.node, "same_node": self.same, "kept_as_measured": list(self.kept),
                "given": list(self.given), "moved_by_ratio": dict(self.by_ratio), "absolute": dict(self.absolute)}


def _models(by_ops: dict[str, list[str]]) -> str:
    return ", ".join(f"{ops} ({', '.join(models)})" for ops, models in by_ops.items())


def _host_name(machine: Machine) -> str:
    host = machine.cpu.host
    return host.key if host is not None else machine.cpu.model


def _gpus(machine: Machine) -> str:
    n = machine.gpu.count
    return f"{n} x {machine.gpu.model}" if n > 1 else machine.gpu.model


def _links(a: Machine, b: Machine) -> str:
    """``host link PCIe gen3 x16 both`` or ``host link PCIe gen2 x16 -> PCIe gen3 x16`` (distinct labels)."""
    from nodecast.machines.compose import link_label

    def labels(m: Machine) -> list[str]:
        return list(dict.fromkeys(link_label(m.host_link(g)) for g in range(m.gpu.count)))

    la, lb = labels(a), labels(b)
    if la == lb:
        return f"host link {', '.join(la)} both"
    return f"host link {', '.join(la)} -> {', '.join(lb)}"


def node_change(source: Machine, target: Machine) -> str:
    """What B is to A, in words (the first part of the line)."""
    from nodecast.machines.compose import same_host

    if source == target:
        return f"B is A's node unchanged ({source.name})"
    links = _links(source, target)
    gpu_a, gpu_b = _gpus(source), _gpus(target)
    if same_host(source, target):
        if gpu_a != gpu_b:
            return f"B is A's node with the GPU changed: {gpu_a} -> {gpu_b} ({links})"
        if "->" in links:
            return f"B is A's node with the GPU's {links}"
        return f"B is A's node with other figures ({target.name}; {links})"
    gpus = f"GPU {gpu_a} -> {gpu_b}" if gpu_a != gpu_b else f"the same GPU ({gpu_a})"
    return f"B is another node: {gpus}, host {_host_name(source)} -> {_host_name(target)} ({links})"


def describe(graph: OpGraph, source: Machine, target: Machine, costs: OpCosts,
             options: CostOptions | None = None) -> Change:
    """What the forecast of ``graph`` from ``source`` onto ``target`` kept and changed (module docstring)."""
    from nodecast.cost.ops import CostOptions
    from nodecast.machines.compose import same_host

    opts = options or CostOptions()
    kind = graph.ops["kind"]
    kept: list[str] = []
    given: list[str] = []
    host_gaps = bool((kind >= OpKind.API).any() or np.any(graph.kind == EdgeKind.RECORDED_OFFSET))
    if host_gaps:
        (kept.append("host work") if opts.host_scale == 1.0
         else given.append(f"host work x{opts.host_scale:g} (--host-scale)"))
    if np.any(graph.kind == EdgeKind.LAUNCH):
        (kept.append("launch latencies") if opts.launch_latency_s is None
         else given.append(f"launch latency {opts.launch_latency_s * 1e6:g} µs (--launch-us)"))
    copies = bool((kind == OpKind.COPY).any())
    by_ratio, absolute = _models_used(graph, costs)
    if copies and "copies" in by_ratio and same_host(source, target):
        kept.append("host copy rate")  # read off A's pageable copies and used on both sides (models.scaled)
    if copies:
        mine = target.measured.one_byte_s if target.measured is not None else {}
        theirs = source.measured.one_byte_s if source.measured is not None else {}
        if opts.one_byte_s:
            given.append("1-byte costs (--one-byte-us)")
        elif not mine or mine == theirs:
            kept.append("1-byte costs")
    n_kept = int(costs.kept(graph).sum())
    if n_kept:
        what = sorted({kind_label(k) + "s" for k in np.unique(kind[costs.kept(graph)])})
        kept.append(f"GPU ops no model handles ({n_kept:,}: {', '.join(what).replace('copys', 'copies')})")
    return Change(node_change(source, target), tuple(kept), by_ratio, absolute, tuple(given), source == target)


def _models_used(graph: OpGraph, costs: OpCosts) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(ops -> the models that moved them by a ratio B/A, ops -> the absolute models that set them), among the
    models that gave some GPU op its time; copies first, then kernels, whatever order the models registered in."""
    from nodecast.cost.ops import HOST, SOURCE
    from nodecast.models.base import is_absolute
    from nodecast.models.registry import get_models

    by_ratio: dict[str, list[str]] = {}
    absolute: dict[str, list[str]] = {}
    used = {costs.model_names[k] for k in np.unique(costs.model[graph.gpu_mask()])} - {SOURCE, HOST}
    models = [get_models([n])[0] for n in costs.model_names if n in used]
    kinds = list(_OPS)
    models.sort(key=lambda m: kinds.index(m.kind) if m.kind in kinds else len(kinds))
    for model in models:
        ops = _OPS.get(model.kind, f"{model.kind} ops")
        (absolute if is_absolute(model) else by_ratio).setdefault(ops, []).append(model.name)
    return by_ratio, absolute

