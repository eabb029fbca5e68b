"""The target nodes of a forecast: what a ``--to`` spec names, and what-if parameters applied to it.

Targets are ``TargetSpec``: a machine (catalogue name, machine file or
``GPU[xN][@HOST]`` spec string) and what-if parameters applied to it.
``--to a,b,c`` gives three specs (``split_targets``); ``--sweep
KEY=V1,V2,...`` (repeatable, ``parse_sweep``) multiplies every ``--to``
machine by the cartesian product of the values (``target_specs``):

=================  ===============================================================
key                what it changes on the target Machine (``apply_params``)
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
names six nodes. A ``--to`` naming a GPU alone (no ``@HOST``) is the
source's node with that GPU (``target_machine``): what it does not name is
the source's. Every spec and value is checked (``InputError``) when it is
loaded, before anything runs. Forecasting on the nodes is
``workflows.forecast`` (one) and ``workflows.targets`` (several, one table).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nodecast.errors import InputError
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Link, Machine

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
