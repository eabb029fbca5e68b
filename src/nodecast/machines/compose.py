"""Compose a node from a GPU data sheet and a host, in a machine file or from a spec string.

In a machine file, ``[gpu] sheet = "KEY"`` fills every GPU value the file
does not give from the data sheet, and ``[cpu] host = "KEY"`` every CPU value
from the host file; values the file gives win. ``Machine.provenance`` keeps,
per field, ``machine file`` or ``data sheet KEY`` / ``host KEY`` (and the
sheet's own value where the file overrides it): ``nodecast.machines.part_tables``.

Without a file, a spec string names a node: ``GPU[xN][@HOST]``, e.g.
``rtx-3090``, ``a100-sxm4-80gbx8@epyc-7742-2s``. GPU is a sheet key or a
device name (``nodecast.machines.names``), N the GPU count (default 1), HOST a
host key. Each GPU gets its own link to a socket (GPUs spread over the
sockets in blocks, as in DGX-style nodes): the host's ``[gpu_link]`` when it
is of the kind the sheet's ``host_link`` names, else the sheet's PCIe link at
the lower of the GPU's and the host's generation. Without HOST the node gets
``DEFAULT_HOST`` (PCIe GPUs) or the one catalogue host that offers the GPU's
own link kind (NVLink-C2C: Grace), and the notes say the host was assumed.
Composed nodes have no GPU-to-GPU links: peer copies route through the host.

A GPU alone as a forecast's target (``gpu_only_spec``: no ``@HOST``) is the
source's node with that GPU (``with_gpu``): the source's host, its measured
host copy rate and 1-byte costs are kept, and only the GPUs and the links that
attach them to the host change. ``same_host`` says whether two nodes share a
host, whose figures then cancel in a ratio B/A.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from nodecast.errors import InputError
from nodecast.machines import sheets as catalogue_sheets  # read at call time: tests give the catalogue another folder
from nodecast.machines.hosts import DEFAULT_HOST, all_hosts, host_keys, load_host
from nodecast.machines.loader import PCIE_DEFAULTS, catalogue_dir, catalogue_names, machine_from_dict
from nodecast.machines.names import machine_sheet, match_sheet
from nodecast.machines.part_tables import MACHINE_FILE, host_label
from nodecast.machines.parts import GpuSheet, Host, SheetLink
from nodecast.machines.schema import Link, Machine
from nodecast.machines.typed_names import MAX_SPEC_GPUS, resolve_typed_name
from nodecast.notes import HOST_ASSUMED, Note
from nodecast.paths import names_a_file

_COUNT = re.compile(r"^(?P<gpu>.+?)x(?P<count>[0-9]+)$")
#: The note of a composed node of several GPUs (``nodecast.machines.resolve`` says more in its place for a node
#: composed from a trace).
NO_PEER_LINKS = ("composed node: no GPU-to-GPU links, peer copies route through the host "
                 "(a catalogue machine or a machine file describes NVLink/NVSwitch)")


# ---------------------------------------------------------------- spec strings


@dataclass(frozen=True)
class NodeSpec:
    """A parsed spec string: ``count`` GPUs of ``sheet`` in ``host`` (``host_assumed`` when defaulted)."""

    sheet: GpuSheet
    count: int
    host: Host
    host_assumed: bool

    @property
    def name(self) -> str:
        """The canonical spec: ``rtx-3090@xeon-platinum-8480c-2s``, ``a100-sxm4-80gbx8@epyc-7742-2s``."""
        count = f"x{self.count}" if self.count > 1 else ""
        return f"{self.sheet.key}{count}@{self.host.key}"


def _find_sheet_quietly(text: str) -> GpuSheet | None:
    """The sheet keyed or named ``text`` among those that load; None when none is (the caller says what is known)."""
    if names_a_file(catalogue_sheets.gpus_dir() / f"{text}.toml"):
        return catalogue_sheets.load_sheet(text)
    hit = match_sheet(text, catalogue_sheets.loadable_sheets()[0])
    return None if hit is None else hit.sheet


def default_host_for(sheet: GpuSheet) -> Host:
    """``DEFAULT_HOST`` for a PCIe GPU; for another host-link kind, the one catalogue host that offers it."""
    if sheet.host_link.kind == "pcie":
        return load_host(DEFAULT_HOST)
    offers = [h for h in all_hosts() if h.gpu_link is not None and h.gpu_link.kind == sheet.host_link.kind]
    if len(offers) == 1:
        return offers[0]
    listed = ", ".join(h.key for h in offers) or "none in the catalogue"
    raise InputError(f"{sheet.key} attaches to its host by {sheet.host_link.kind}; hosts that offer it: {listed}",
                     key="host", hint=f"Name one: {sheet.key}@HOST, or write a machine file "
                                      f"(nodecast machines template --gpu {sheet.key})")


def parse_spec(spec: str) -> NodeSpec | None:
    """``GPU[xN][@HOST]`` -> NodeSpec; None when GPU names no data sheet (so the caller can say what is known).

    Raises InputError for a bad count or an unknown host.
    """
    gpu_text, at, host_text = spec.partition("@")
    gpu_text = gpu_text.strip()
    if not gpu_text:
        return None
    count = 1
    sheet = _find_sheet_quietly(gpu_text)
    if sheet is None:
        m = _COUNT.match(gpu_text)
        if m is None:
            return None
        sheet = _find_sheet_quietly(m.group("gpu"))
        if sheet is None:
            return None
        count = int(m.group("count"))
        if not 1 <= count <= MAX_SPEC_GPUS:
            raise InputError(f"GPU count {count} in {spec!r} must be 1 to {MAX_SPEC_GPUS}", key="machine",
                             hint="e.g. a100-sxm4-80gbx8@HOST")
    if at and not host_text.strip():
        raise InputError(f"no host after '@' in {spec!r}", key="machine", hint="e.g. rtx-3090@HOST (nodecast machines list)")
    if at:
        return NodeSpec(sheet, count, load_host(host_text.strip()), host_assumed=False)
    return NodeSpec(sheet, count, default_host_for(sheet), host_assumed=True)


def _gpu_link(spec: NodeSpec, gpu: int, socket: int) -> tuple[dict[str, Any], list[str]]:
    sheet, host = spec.sheet, spec.host
    own, offered = sheet.host_link, host.gpu_link
    ends = [f"cpu{socket}", f"gpu{gpu}"]
    if offered is not None and offered.kind == own.kind:
        link: dict[str, Any] = {"kind": offered.kind}
        if offered.kind == "infinity-fabric":
            # nodecast's transfer models know no Infinity Fabric framing: the link is a bus at its raw rate.
            link = {"kind": "socket-bus", "bandwidth_bps": offered.bandwidth_bps}
            note = f"{host.key}'s Infinity Fabric GPU link modelled as a bus at its raw rate"
            return {"id": f"if-gpu{gpu}", "endpoints": ends, **link}, [note]
        for k in ("gen", "links", "bandwidth_bps"):
            if getattr(offered, k) is not None:
                link[k] = getattr(offered, k)
        return {"id": f"{offered.kind}-gpu{gpu}", "endpoints": ends, **link}, []
    if own.kind == "pcie":
        gen = min(own.gen, host.pcie_gen)  # type: ignore[type-var]
        notes = []
        if gen < own.gen:  # type: ignore[operator]
            notes.append(f"{sheet.key}'s PCIe gen{own.gen} x{own.lanes} runs at gen{gen} in host {host.key}")
        link = {"id": f"pcie-gpu{gpu}", "kind": "pcie", "endpoints": ends, "gen": gen, "lanes": own.lanes}
        if own.bandwidth_bps is not None:
            link["bandwidth_bps"] = own.bandwidth_bps
        return link, notes
    has = "PCIe only" if offered is None else f"{offered.kind}, not {own.kind}"
    raise InputError(f"{sheet.key} attaches to its host by {own.kind} but host {host.key} offers {has}",
                     key="host", hint="Name a host that offers it (nodecast machines list) or write a machine file "
                                      f"(nodecast machines template --gpu {sheet.key} --host {host.key})")


def spec_machine_dict(spec: NodeSpec) -> tuple[dict[str, Any], list[str]]:
    """The machine-file table of a composed node, and its composition notes."""
    sockets = spec.host.cpu.sockets
    placement = [g * sockets // spec.count for g in range(spec.count)]
    links, notes = [], []
    for g, s in enumerate(placement):
        link, why = _gpu_link(spec, g, s)
        links.append(link)
        notes += [n for n in why if n not in notes]
    if sockets > 1 and spec.host.socket_bus_bps is not None:
        for s in range(1, sockets):
            links.append({"id": f"socket-bus{s}", "kind": "socket-bus", "endpoints": ["cpu0", f"cpu{s}"],
                          "bandwidth_bps": spec.host.socket_bus_bps})
    if spec.host_assumed:
        notes.insert(0, Note(f"host assumed: {spec.host.key} ({spec.host.description}); name one with "
                             f"{spec.sheet.key}@HOST (nodecast machines list) or give a machine file", HOST_ASSUMED))
    if spec.count > 1:
        notes.append(NO_PEER_LINKS)
    data = {
        "schema_version": 1,
        "name": spec.name,
        "description": f"{spec.count} x {spec.sheet.name} in {spec.host.description} (composed from data sheets)",
        "cpu": {"host": spec.host.key},
        "gpu": {"sheet": spec.sheet.key, "count": spec.count, "cpu_socket": placement},
        "links": links,
    }
    return data, notes


def compose_machine(spec: str | NodeSpec) -> Machine:
    """The Machine a spec string names (``rtx-3090``, ``h100-sxm5-80gbx8@xeon-platinum-8480c-2s``)."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed is None:
        raise InputError(f"{spec!r} names no GPU data sheet", key="machine",
                         hint="Spec strings read GPU[xN][@HOST] with a sheet key (nodecast machines list)")
    data, notes = spec_machine_dict(parsed)
    machine = machine_from_dict(data, parsed.name)
    # No file here: what a machine file would give (count, placement) comes from the spec string.
    provenance = {k: f"spec {parsed.name}" if v == MACHINE_FILE else v for k, v in machine.provenance.items()}
    if parsed.host_assumed:
        provenance = {k: host_label(parsed.host, assumed=True) if v == host_label(parsed.host) else v
                      for k, v in provenance.items()}
    return replace(machine, path=None, provenance=MappingProxyType(provenance),
                   notes=tuple(notes) + machine.notes)


# ---------------------------------------------------------------- A's node with another GPU

#: ``Note.about`` of the note of a node that is A's with another GPU (``with_gpu``): its host is A's.
A_HOST_KEPT = "a-host-kept"
#: ``[measured.facts]`` keys about the host, kept when only the GPU changes (the others describe A's GPU).
_HOST_FACTS = ("host_copy", "host", "os")


def gpu_only_spec(text: str) -> tuple[GpuSheet, int | None] | None:
    """``(sheet, count)`` when ``text`` names a GPU only: a sheet key or device name, optionally ``xN`` (``count``
    None when no ``xN`` is given), with no ``@HOST``, and not a machine file or catalogue node; else None.

    Such a target means *the source's node with another GPU* (``with_gpu``): what the user names is what
    changes. A node that names a host (a catalogue node, ``GPU@HOST``, a machine file) changes the host too.
    """
    text = str(text)
    if "@" in text or text.endswith(".toml") or "/" in text or names_a_file(text):
        return None
    if names_a_file(catalogue_dir() / f"{text}.toml"):
        return None
    gpu = text.strip()
    if not gpu:
        return None
    sheet = _find_sheet_quietly(gpu)
    if sheet is not None:
        return sheet, None
    m = _COUNT.match(gpu)
    if m is not None and (sheet := _find_sheet_quietly(m.group("gpu"))) is not None:
        count = int(m.group("count"))
        if not 1 <= count <= MAX_SPEC_GPUS:
            raise InputError(f"GPU count {count} in {text!r} must be 1 to {MAX_SPEC_GPUS}", key="machine",
                             hint="e.g. a100-sxm4-80gbx8")
        return sheet, count
    canonical = resolve_typed_name(text, catalogue_names(), catalogue_sheets.loadable_sheets()[0], host_keys())
    return gpu_only_spec(canonical) if canonical is not None and canonical != text else None


def link_label(link: Any) -> str:  # noqa: ANN401 (a schema Link)
    """``PCIe gen3 x16``, ``NVLink2 x2``, ``NVLink-C2C 450 GB/s``: a link as the notes name it."""
    if link.kind in ("pcie", "nvlink", "nvlink-c2c", "infinity-fabric"):
        return SheetLink(link.kind, link.gen, link.lanes, link.links, link.bandwidth_bps).label
    if link.kind == "xgmi":  # AMD Infinity Fabric between GPUs (machine files only; no sheet link is one)
        return f"xGMI gen{link.gen} x{link.links}"
    rate = f" {link.bandwidth_bps / 1e9:g} GB/s" if link.bandwidth_bps else ""
    return f"{link.kind}{rate}"


def same_host(a: Machine, b: Machine) -> bool:
    """Whether nodes ``a`` and ``b`` have the same host: the same CPUs and host memory and the same host copy
    rate (a measured one included). Where they do, what the host sets (host work, the staging of pageable
    copies, the 1-byte costs) is the same on both, and cancels in a ratio B/A."""
    rate_a, rate_b = a.host_copy_bandwidth(), b.host_copy_bandwidth()
    return a.cpu == b.cpu and (rate_a and rate_a[0]) == (rate_b and rate_b[0])


def _attachments(machine: Machine) -> dict[int, Any]:
    """GPU index -> the link that attaches it to its host route (the hop that touches the GPU)."""
    out = {}
    for g in range(machine.gpu.count):
        own = f"gpu{g}"
        out[g] = next(link for link in machine.host_route(g) if own in link.endpoints)
    return out


def _new_attachment(old: Any, sheet: GpuSheet, source: Machine, notes: list[str]) -> Any:  # noqa: ANN401
    """The link that attaches a GPU of ``sheet`` where ``old`` attached one of ``source``'s GPUs.

    The slot (PCIe generation and width) is the host's: the lower of the new GPU's own and the slot's, as
    ``_gpu_link`` composes it. The slot's generation is the host file's ``pcie_gen`` where the link ends at a CPU
    socket of a known host, else ``old``'s (the slot ran A's GPU at it; a note says so when the new GPU could go
    faster). Where nothing changes, ``old`` is kept as it is (its TLP settings and any rate given by hand).
    """
    own = sheet.host_link
    other = next(e for e in old.endpoints if not e.startswith("gpu"))
    host = source.cpu.host  # the host file A's CPU values came from (None: a machine file gives them by hand)
    if own.kind == "pcie" and old.kind == "pcie":
        a_sheet = source.gpu.sheet
        a_own = a_sheet.host_link if a_sheet is not None and a_sheet.host_link.kind == "pcie" else None
        limited_gen = a_own is not None and a_own.gen is not None and old.gen is not None and a_own.gen > old.gen
        if not limited_gen and other.startswith("cpu") and host is not None:
            slot_gen = max(host.pcie_gen, old.gen or 0)
        else:
            slot_gen = old.gen
            note = (f"{sheet.key}'s PCIe gen{own.gen} taken to run at gen{old.gen} in {source.name}: the generation "
                    "A's GPU link runs at, taken as its slot's")
            if (own.gen or 0) > (old.gen or 0) and not limited_gen and note not in notes:
                notes.append(note)
        limited_lanes = a_own is not None and a_own.lanes is not None and old.lanes is not None \
            and a_own.lanes > old.lanes
        gen = min(own.gen, slot_gen) if own.gen is not None and slot_gen is not None else (own.gen or slot_gen)
        lanes = min(own.lanes, old.lanes) if limited_lanes and own.lanes is not None else (own.lanes or old.lanes)
        if (gen, lanes) == (old.gen, old.lanes) and own.bandwidth_bps is None:
            return old
        return replace(old, gen=gen, lanes=lanes, bandwidth_bps=own.bandwidth_bps)
    if own.kind == old.kind:  # the host's own NVLink (POWER9) or C2C: the host side sets it, as _gpu_link does
        return old
    if host is None or not other.startswith("cpu"):
        raise InputError(f"{sheet.key} attaches to its host by {own.kind}, {source.name}'s GPUs by {old.kind}, and "
                         f"{source.name} names no host file to attach it by {own.kind}", key="--to",
                         hint=f"Name B's host too ({sheet.key}@HOST, nodecast machines list) or write a machine file")
    socket = int(other[3:])
    gpu = int(next(e for e in old.endpoints if e.startswith("gpu"))[3:])
    table, why = _gpu_link(NodeSpec(sheet, source.gpu.count, host, host_assumed=False), gpu, socket)
    notes += [n for n in why if n not in notes]
    link = Link(id=old.id, kind=table["kind"], endpoints=old.endpoints, gen=table.get("gen"),
                lanes=table.get("lanes"), links=table.get("links"), bandwidth_bps=table.get("bandwidth_bps"))
    return replace(link, **PCIE_DEFAULTS) if link.kind == "pcie" else link


def with_gpu(source: Machine, sheet: GpuSheet) -> Machine:
    """Node A (``source``) with its GPUs replaced by GPUs of ``sheet``, as many: the same host, only the GPUs and
    the links that attach them to the host change (``_new_attachment``).

    What the host sets is kept: the CPU values, the measured host copy rate and 1-byte costs (``[measured]``);
    a link measurement (``bandwidth_bps``, curves) is kept only where no GPU's link changes, and A's GPU
    measurements (peaks, memory levels) go with A's GPU. Links between GPUs (NVLink, NVSwitch) are A's, said in
    a note. ``source`` itself when ``sheet`` is already A's GPU: ``--from X --to X``'s GPU gives A back.
    """
    mine = machine_sheet(source)
    if mine is not None and mine.key == sheet.key:
        return source
    n = source.gpu.count
    # The GPU values as a node composed from the sheet has them (the host here is only a carrier).
    composed = compose_machine(NodeSpec(sheet, n, default_host_for(sheet), host_assumed=False))
    notes: list[str] = []
    old = _attachments(source)
    swap = {}
    for g, link in old.items():
        if link.id not in swap:
            swap[link.id] = _new_attachment(link, sheet, source, notes)
    links = tuple(swap.get(link.id, link) for link in source.links)
    changed = any(swap[link.id] is not link for link in old.values())
    m = source.measured
    if m is not None:
        keep = {"origin": m.origin, "date": m.date, "driver": m.driver, "one_byte_s": m.one_byte_s,
                "host_copy_bandwidth_bps": m.host_copy_bandwidth_bps,
                "facts": {k: v for k, v in m.facts.items() if k in _HOST_FACTS}}
        if not changed:
            keep.update(bandwidth_bps=m.bandwidth_bps, curves=m.curves)
        m = type(m)(**keep)
    a_gpu = source.gpu.model
    name = node_name(sheet, n, source)
    attach = sorted({f"{link_label(old[g])} -> {link_label(swap[old[g].id])}" if swap[old[g].id] is not old[g]
                     else f"{link_label(old[g])} both" for g in old})
    notes.insert(0, Note(f"B is A's node ({source.name}) with the GPU changed: {a_gpu} -> {sheet.name} (--to named "
                         f"a GPU only: A's host kept; host link {'; '.join(attach)})", A_HOST_KEPT))
    peers = [lk for lk in source.links if lk.id not in swap and any(e.startswith("gpu") for e in lk.endpoints)]
    if peers:
        kinds = ", ".join(sorted({link_label(lk) for lk in peers}))
        notes.append(f"links between GPUs kept from {source.name} ({kinds}): {sheet.key}'s are taken to be the same "
                     "(a catalogue node or a machine file describes B's own)")
    gpu = replace(composed.gpu, cpu_socket=source.gpu.cpu_socket)
    provenance = {**{k: v for k, v in source.provenance.items() if not k.startswith("gpu.")},
                  **{k: v for k, v in composed.provenance.items() if k.startswith("gpu.")}}
    provenance["gpu.cpu_socket"] = source.provenance.get("gpu.cpu_socket", f"node {source.name}")
    return replace(source, name=name, description=f"{source.description}, with {n} x {sheet.name} in place of "
                                                  f"its GPUs", gpu=gpu, links=links, measured=m, path=None,
                   provenance=MappingProxyType(provenance), notes=tuple(notes))


def shared_host_note(source: Machine, target: Machine) -> str | None:
    """One note for a host A and B share and that was assumed (A's ``HOST_ASSUMED`` note said it for A alone);
    None when A's host was named or B's host is another.

    The host's figures are on both sides of every ratio B/A and cancel, except where B's GPU links differ from
    A's: a PCIe link runs at the lower of the GPU's and the slot's generation, and the slot is the assumed
    host's. Then the note is weighed as an assumption (``HOST_ASSUMED``, ``nodecast.notes``); else it is not.
    """
    host = source.cpu.host
    if host is None or not same_host(source, target) \
            or not any(getattr(n, "about", "") == HOST_ASSUMED for n in source.notes):
        return None
    gpu = machine_gpu_key(source)
    both = target == source or any(getattr(n, "about", "") in (HOST_ASSUMED, A_HOST_KEPT) for n in target.notes)
    whose = "host assumed for A and B alike" if both else "A's host assumed to be the one B names"
    name = f"(name A's host with --from {gpu}@HOST, or give a machine file)"
    links_a = sorted({link_label(source.host_link(g)) for g in range(source.gpu.count)})
    links_b = sorted({link_label(target.host_link(g)) for g in range(target.gpu.count)})
    if target == source:
        return (f"{whose}: {host.key} ({host.description}); B is A's node, so its figures cancel in the ratios B/A "
                f"{name}")
    if links_a == links_b:
        return (f"{whose}: {host.key} ({host.description}); as only the GPU changes, the host's figures cancel in the "
                f"ratios B/A {name}")
    return Note(f"{whose}: {host.key} ({host.description}); its figures cancel in the ratios B/A but for its PCIe "
                f"slots' generation, which sets the GPU links (A's {', '.join(links_a)}, B's {', '.join(links_b)}) "
                f"{name}", HOST_ASSUMED)


def node_name(sheet: GpuSheet, count: int, source: Machine) -> str:
    """The name of ``source``'s node with ``count`` GPUs of ``sheet``: ``GPU[xN]@HOST`` with A's host part
    (``gtx-970@xeon-platinum-8480c-2s`` for A ``gtx-titan@xeon-platinum-8480c-2s``; ``gtx-970@titan`` for A
    ``titan``)."""
    host_part = source.name.split("@", 1)[1] if "@" in source.name else source.name
    return f"{sheet.key}{'x' + str(count) if count > 1 else ''}@{host_part}"


def machine_gpu_key(machine: Machine) -> str:
    """The sheet key of ``machine``'s GPU, else its model name."""
    return machine.gpu.sheet.key if machine.gpu.sheet is not None else machine.gpu.model


def node_notes(source: Machine, target: Machine) -> list[str]:
    """The notes of A (origin ``machine A``) and B (``machine B``); a host both share and that was assumed is said
    once (``shared_host_note``), in place of each node's note on it."""
    from nodecast.notes import about, from_, retold

    shared = shared_host_note(source, target)
    if shared is None:
        return [*from_(source.notes, "machine A"), *from_(target.notes, "machine B")]
    a_notes = [n for n in source.notes if about(n) != HOST_ASSUMED]
    b_notes = [n for n in target.notes if about(n) != HOST_ASSUMED]
    return [*from_(a_notes, "machine A"), retold(shared, str(shared), "machines A and B"),
            *from_(b_notes, "machine B")]
