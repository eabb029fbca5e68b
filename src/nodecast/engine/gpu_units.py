"""The units an op of a replay may wait for: the GPUs' copy engines and kernel slots.

Copies need a copy engine of their device: one per direction (HtoD, DtoH,
peer, host-to-host), or one for every direction on a GPU with a single
asynchronous engine; kernels a kernel slot of their device when
``max_concurrent_kernels`` is given. An op that finds every unit busy waits
(first come, first served) and starts when one frees (``event_replay``). With
the graph's own engines (``params["copy_engines"]`` and
``params["shared_copy_engine"]``: the trace's recorded engines, or
``--copy-engines``) the graph's ENGINE_ORDER edges already serialise the
copies and the unit never makes one wait.

On a machine (``machine_units``) the units are the target's: its copy engines
(``Machine.gpu.copy_engines``, CUDA's asyncEngineCount from the GPU data sheet
or the machine file: 1 = one engine for every direction, 2 or more = one per
direction, as the graph builder reads a trace's count) and its kernel slots
(``Machine.gpu.max_concurrent_kernels``, the resident grids per device of the
CUDA Programming Guide). Where the target's engines differ from the trace's,
the trace's ENGINE_ORDER edges of those devices are dropped (they say in which
order the source's engines served the copies) and the copies queue for the
target's engines instead; a machine that gives no count keeps the trace's. A
kernel slot unit is made only for a GPU with more streams of kernels than
slots: kernels of one stream never overlap (stream order), so with fewer
streams no kernel can wait for a slot. Graph device ``d`` runs on the
machine's GPU ``d mod count``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from nodecast.graph.opgraph import EdgeKind, Engine, OpGraph, OpKind

#: Copy engine classes that take a copy engine (as ``build.py``'s ENGINE_ORDER chains).
ENGINE_CLASSES = (Engine.HTOD, Engine.DTOH, Engine.PEER, Engine.HTOH)


@dataclass
class Units:
    """Units an op needs (copy engines, kernel slots): per op a unit id (-1 none), per unit a count, a name, and
    whether the graph already runs its ops one after the other (a single unit with an ENGINE_ORDER chain through
    all its ops: it can never make one wait)."""

    unit: np.ndarray
    count: list[int]
    names: list[str]
    chained: list[bool] = field(default_factory=list)

    def binding(self) -> np.ndarray:
        """Per op, the unit it may have to wait for (-1: none, or a chained one)."""
        if not any(self.chained):
            return self.unit
        return np.where(np.isin(self.unit, np.flatnonzero(self.chained)), -1, self.unit).astype(np.int32)


#: Copy engines of a GPU: (engines, shared). ``shared``: one engine serves every direction (CUDA asyncEngineCount
#: 1); else ``engines`` per direction (one when the count says only that copies of both directions overlap).
EngineLayout = tuple[int, bool]


def graph_engines(graph: OpGraph) -> dict[int, EngineLayout]:
    """The copy engines the graph was built with, per device (``OpGraph.params``)."""
    shared = set(graph.params.get("shared_copy_engine") or ())
    return {int(d): (int(k), int(d) in shared) for d, k in (graph.params.get("copy_engines") or {}).items()}


def machine_engines(async_engines: int) -> EngineLayout:
    """A GPU's copy engines from CUDA's asyncEngineCount: 1 is one engine for every direction; 2 or more copy in
    both directions at once ("2 if the device can concurrently copy memory between host and device in both
    directions", cudaDeviceProp::asyncEngineCount), taken as one engine per direction, as the graph builder reads
    a trace's count."""
    return (1, True) if async_engines == 1 else (1, False)


def describe_engines(layout: EngineLayout) -> str:
    """``one copy engine for every direction`` / ``N copy engine(s) per direction``."""
    k, shared = layout
    return "one copy engine for every direction" if shared else f"{k} copy engine{'s' if k > 1 else ''} per direction"


def _stream_ordered(graph: OpGraph) -> np.ndarray:
    """Keys (device << 40 + queue) of the GPU streams whose ops are one STREAM_ORDER chain (no two overlap)."""
    ops = graph.ops
    gpu = graph.gpu_mask()
    key = np.where(gpu, ops["device"].astype(np.int64) * (1 << 40) + ops["queue"], -1)
    streams, count = np.unique(key[gpu], return_counts=True)
    chain = graph.kind == EdgeKind.STREAM_ORDER
    u, v = graph.src[chain], graph.edge_dst()[chain]
    same = key[u] == key[v]
    links = np.bincount(np.searchsorted(streams, key[v][same]), minlength=streams.size) if streams.size else count
    return streams[links == count - 1]


def op_units(graph: OpGraph, max_concurrent_kernels: int | None, engines: EngineLayout | None = None,
             gpus: int | None = None) -> Units:
    """The units of the replay: copy engines (the graph's per device, or ``engines`` on every GPU) and kernel
    slots; with ``gpus``, graph device ``d`` uses the units of GPU ``d mod gpus``."""
    ops = graph.ops
    n = len(graph)
    unit = np.full(n, -1, np.int32)
    count: list[int] = []
    names: list[str] = []
    device = ops["device"].astype(np.int64)
    target = device % gpus if gpus else device
    copies = (ops["kind"] == OpKind.COPY) & np.isin(ops["engine"], ENGINE_CLASSES)
    if engines is None:
        layout = graph_engines(graph)
    else:
        layout = {int(d): engines for d in np.unique(target[copies & (device >= 0)])}
    for d, (k, shared) in sorted(layout.items()):
        groups = [(None, "")] if shared else [(e, " " + Engine(e).name.lower()) for e in ENGINE_CLASSES]
        for e, label in groups:
            mine = copies & (target == d) if e is None else copies & (target == d) & (ops["engine"] == e)
            if mine.any():
                unit[mine] = len(count)
                count.append(int(k))
                names.append(f"copy engine dev{d}{label}")
    if max_concurrent_kernels is not None:
        if max_concurrent_kernels < 1:
            msg = f"max_concurrent_kernels must be >= 1 (got {max_concurrent_kernels})"
            raise ValueError(msg)
        kernels = (ops["kind"] == OpKind.KERNEL) & (device >= 0)
        ordered = _stream_ordered(graph)
        for d in np.unique(target[kernels]).tolist():
            mine = kernels & (target == d)
            # NOTE: kernels of one stream the graph chains never overlap: with no more streams than slots, none waits.
            streams = np.unique(device[mine] * (1 << 40) + ops["queue"][mine])
            if np.isin(streams, ordered).all() and streams.size <= max_concurrent_kernels:
                continue
            unit[mine] = len(count)
            count.append(int(max_concurrent_kernels))
            names.append(f"kernel slots dev{d}")
    units = Units(unit, count, names)
    if count:
        chain = graph.kind == EdgeKind.ENGINE_ORDER
        src = graph.src[chain]
        dst = graph.edge_dst()[chain]
        same = (unit[src] == unit[dst]) & (unit[dst] >= 0)
        links_in = np.bincount(unit[dst][same], minlength=len(count))
        ops_in = np.bincount(unit[unit >= 0], minlength=len(count))
        units.chained = [c == 1 and links_in[u] == ops_in[u] - 1 for u, c in enumerate(count)]
    return units



def without_engine_order(graph: OpGraph, devices: list[int]) -> OpGraph:
    """``graph`` without the ENGINE_ORDER edges into copies of ``devices`` (same ops, order still topological)."""
    dst = graph.edge_dst()
    drop = (graph.kind == EdgeKind.ENGINE_ORDER) & np.isin(graph.ops["device"][dst], devices)
    if not drop.any():
        return graph
    keep = ~drop
    indptr = np.zeros(len(graph) + 1, np.int64)
    np.cumsum(np.bincount(dst[keep], minlength=len(graph)), out=indptr[1:])
    return replace(graph, indptr=indptr, src=graph.src[keep], kind=graph.kind[keep], anchor=graph.anchor[keep],
                   lag_s=graph.lag_s[keep])


def machine_units(graph: OpGraph, machine: Any, *, copy_engines_per_direction: int | None = None,
                  max_concurrent_kernels: int | None = None) -> tuple[OpGraph, EngineLayout | None, int | None,
                                                                        list[str]]:
    """The target's units for ``replay_shared``: (graph to replay, copy engines of every GPU or None for the
    graph's own, kernel slots per GPU or None, notes).

    Copy engines: ``copy_engines_per_direction`` when given (as ``--copy-engines`` gives the graph's), else the
    machine's (``Machine.gpu.copy_engines``, see ``machine_engines``), else the graph's. Where they differ from the
    graph's, its ENGINE_ORDER edges of those devices are dropped (``without_engine_order``). Kernel slots:
    ``max_concurrent_kernels`` when given, else the machine's.
    """
    gpu = machine.gpu
    notes: list[str] = []
    source = "given" if copy_engines_per_direction is not None else _gpu_source(machine, "copy_engines")
    if copy_engines_per_direction is not None:
        layout: EngineLayout | None = (int(copy_engines_per_direction), False)
    elif gpu.copy_engines is not None:
        layout = machine_engines(int(gpu.copy_engines))
    else:
        layout = None
    own = graph_engines(graph)
    if layout is None:
        if own:
            notes.append(f"copy engines of {machine.name}: neither its machine file nor its GPU data sheet gives "
                         "them; the trace's kept (" + ", ".join(f"GPU {d}: {describe_engines(v)}"
                                                                for d, v in sorted(own.items())) + ")")
    else:
        count = f" (asyncEngineCount {gpu.copy_engines})" if copy_engines_per_direction is None else ""
        notes.append(f"copy engines of {machine.name}: {describe_engines(layout)}{count}, {source}")
        gpus = gpu.count
        differ = sorted(d for d, v in own.items() if v != layout or d >= gpus)
        if differ:
            graph = without_engine_order(graph, differ)
            notes.append(f"the trace's copy engines of GPU(s) {differ} differ from {machine.name}'s "
                         f"({'; '.join(f'{d}: {describe_engines(own[d])}' for d in differ)}): their recorded engine "
                         "order is dropped and copies queue for the target's engines (first come, first served)")
        elif not own:
            layout = None  # no copy: nothing waits for an engine
    slots = max_concurrent_kernels if max_concurrent_kernels is not None else gpu.max_concurrent_kernels
    if slots is not None:
        origin = "given" if max_concurrent_kernels is not None else _gpu_source(machine, "max_concurrent_kernels")
        notes.append(f"kernel slots of {machine.name}: {slots} concurrent kernels per GPU, {origin}")
    return graph, layout, slots, notes


def _gpu_source(machine: Any, key: str) -> str:
    """Where a ``[gpu]`` value of ``machine`` came from (its provenance: machine file or data sheet)."""
    where = (getattr(machine, "provenance", None) or {}).get(f"gpu.{key}")
    if where:
        return f"from {where}"
    sheet = machine.gpu.sheet
    return f"from GPU data sheet {sheet.key}" if sheet is not None and getattr(sheet, key) is not None else \
        "from the machine file"
