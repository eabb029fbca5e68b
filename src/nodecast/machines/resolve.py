"""Pick the node a trace was recorded on, or check the one the user named against the trace's GPU.

Traces record their GPUs' device names (``Trace.meta.gpus``, e.g.
``{0: 'NVIDIA GeForce RTX 3090'}``). ``resolve_source``:

* without a machine (``--from`` omitted): finds the data sheet of the name of
  the GPUs the trace has ops on (``nodecast.machines.names``) and composes a
  node of as many GPUs of that name as the trace lists (readers list every GPU
  of the node) with the default host (``nodecast.machines.compose``); the
  notes say so. A trace that lists several GPUs records nothing of the links
  between them: the notes say none were assumed and name the catalogue's
  nodes of such GPUs whose GPUs are linked (``linked_nodes``), for ``--from``;
* with a machine: checks that its GPU is the trace's. A different GPU is an
  ``InputError`` naming both, unless ``allow_mismatch``, which turns it into a
  note. Two sheets count as the same GPU when they agree on target, SMs,
  boost clock and DRAM bandwidth (a V100 SXM2 16 GB trace on a 32 GB node).
  A GPU that no sheet describes cannot be checked; a note says so.

A GPU with a generic name ("Graphics Device", which NVIDIA drivers give boards
they do not know) matches no sheet by name: the compute capability, SM count
and memory the trace records for it pick the sheet (``nodecast.machines.
properties``), and the note says so; when they are not recorded or do not
decide, omitting ``--from`` is an InputError asking for it.

The returned Machine carries these notes in ``Machine.notes``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from nodecast.errors import InputError
from nodecast.machines.compose import NO_PEER_LINKS, NodeSpec, compose_machine, default_host_for
from nodecast.machines.device_properties import GpuProperties
from nodecast.machines.loader import catalogue_dir, load_machine_file
from nodecast.machines.lookup import load_machine
from nodecast.machines.names import (
    SheetMatch,
    is_generic_gpu_name,
    machine_sheet,
    match_sheet,
    normalise_gpu_name,
    unambiguous_match,
)
from nodecast.machines.parts import GpuSheet
from nodecast.machines.properties import match_by_properties
from nodecast.machines.schema import Machine
from nodecast.notes import GPU_MISMATCH, Note


def trace_gpu_names(trace: Any) -> dict[int, str]:
    """Device index -> GPU name of a Trace, a TraceMeta, a ``{device: name}`` mapping or a list of names."""
    if trace is None:
        return {}
    meta = getattr(trace, "meta", trace)
    gpus = getattr(meta, "gpus", meta)
    if isinstance(gpus, Mapping):
        return {int(k): str(v) for k, v in gpus.items() if str(v).strip()}
    if isinstance(gpus, Iterable) and not isinstance(gpus, str):
        return {i: str(v) for i, v in enumerate(gpus) if str(v).strip()}
    msg = f"cannot read GPU names from {type(trace).__name__}"
    raise TypeError(msg)


def trace_gpu_properties(trace: Any) -> dict[int, GpuProperties]:
    """Device index -> the properties a Trace (or TraceMeta) records of that GPU; empty when it records none."""
    meta = getattr(trace, "meta", trace)
    props = getattr(meta, "gpu_properties", None)
    return {int(k): v for k, v in props.items() if isinstance(v, GpuProperties)} if isinstance(props, Mapping) else {}


def _recorded(name: str, names: Mapping[int, str], properties: Mapping[int, GpuProperties]) -> GpuProperties | None:
    """What the trace records of the (first) device named ``name``; None when nothing is."""
    return next((properties[d] for d, n in names.items() if n == name and d in properties
                 and properties[d].known()), None)


def _generic_match(name: str, names: Mapping[int, str], properties: Mapping[int, GpuProperties],
                   where: str | None, option: str, hint: str) -> SheetMatch:
    """The sheet of a generically named GPU from its recorded properties; InputError when they do not decide."""
    why = f"the trace's GPU is named {name!r}, a generic name drivers give boards they do not know"
    props = _recorded(name, names, properties)
    if props is None:
        raise InputError(f"{why}, and the trace records nothing else to tell which GPU it is", path=where,
                         key=option, hint=hint)
    hit, fits = match_by_properties(props)
    if hit is not None:
        return hit
    found = (f"{len(fits)} data sheets: {', '.join(sorted(s.key for s in fits))}" if fits else "no data sheet")
    raise InputError(f"{why}; the {props.describe()} the trace records for it fit {found}", path=where,
                     key=option, hint=hint)


def _used(trace: Any, names: dict[int, str]) -> dict[int, str]:
    """The names of the devices the trace has ops on (readers may list every GPU of the node); all when unknown."""
    try:
        import numpy as np

        used = {int(d) for d in np.unique(trace["device"])}
    except (TypeError, KeyError, IndexError, ValueError):
        return names
    return {d: n for d, n in names.items() if d in used} or names


def _where(trace: Any) -> str | None:
    meta = getattr(trace, "meta", trace)
    return getattr(meta, "source", None) or None


def same_gpu(a: GpuSheet, b: GpuSheet) -> bool:
    """Whether two sheets describe the same GPU for projection: same target, SMs, boost clock, DRAM bandwidth."""
    return a.key == b.key or (a.target, a.sms, a.boost_clock_hz, a.dram_bandwidth_bps) == (
        b.target, b.sms, b.boost_clock_hz, b.dram_bandwidth_bps)


def _pick(names: dict[int, str], used: dict[int, str], where: str | None,
          option: str, properties: Mapping[int, GpuProperties] | None = None) -> tuple[str, SheetMatch, int]:
    """The one GPU model the trace ran on: (name, its sheet match, GPUs of that name in the node).

    ``names`` are every GPU the trace lists, ``used`` those it has ops on, ``properties`` what the trace records
    of each (used for generically named GPUs).
    """
    machine = f"{option} MACHINE (a catalogue name, a machine file, or GPU[xN][@HOST]; nodecast machines list)"
    hint = f"Give {machine}"
    if not names:
        raise InputError(f"the trace records no GPU name, so {option} cannot be picked from it", path=where,
                         key=option, hint=hint)
    matches: dict[str, SheetMatch] = {}
    for name in dict.fromkeys(used.values()):
        if is_generic_gpu_name(name):
            matches[name] = _generic_match(name, used, properties or {}, where, option,
                                           f"Name the GPU it ran on: {machine}")
            continue
        hit = match_sheet(name)
        if hit is None:
            raise InputError(f"no GPU data sheet matches the trace's GPU {name!r}", path=where, key=option,
                             hint=hint + ", or add the name to a sheet's device_names")
        matches[name] = hit
    keys = {m.sheet.key for m in matches.values()}
    if len(keys) > 1:
        shown = ", ".join(f"{n!r} ({m.sheet.key})" for n, m in matches.items())
        raise InputError(f"the trace ran on GPUs of {len(keys)} models: {shown}", path=where, key=option,
                         hint=hint + "; nodecast models nodes of one GPU model")
    name = next(iter(matches))
    listed = sum(n == name for n in names.values())
    # A reader may list every GPU of the node it ran on (nsys lists 7 RTX 3090s for a run on one): the node is
    # as large as the devices that ran anything need (indices are kept, so device 3 alone needs 4 GPUs).
    ran = [d for d, n in used.items() if n == name]
    return name, matches[name], min(listed, max(ran) + 1) if ran and used is not names else listed


def resolve_source(trace: Any, spec: str | None, allow_mismatch: bool = False, *,
                   option: str = "--from") -> Machine:
    """The node ``trace`` ran on: ``spec`` checked against the trace's GPU, or picked from it when None.

    ``trace`` is a Trace (or anything ``trace_gpu_names`` reads); ``spec`` a
    catalogue name, machine file or spec string (``nodecast.machines.load_machine``);
    ``option`` names the command-line option in messages (``--from``, or
    ``--to`` for the target trace of ``evaluate``). Raises InputError (exit
    code 2) when nothing can be picked, or on a GPU mismatch without
    ``allow_mismatch``.
    """
    names = trace_gpu_names(trace)
    used = _used(trace, names)
    where = _where(trace)
    properties = trace_gpu_properties(trace)
    if spec is None:
        name, hit, count = _pick(names, used, where, option, properties)
        node = NodeSpec(hit.sheet, count, default_host_for(hit.sheet), host_assumed=True)
        machine = compose_machine(node)
        why = f"{option} omitted: the trace's GPU {hit.describe(name)}; node {machine.name}"
        listed = sum(n == name for n in names.values())
        if count < listed:
            why += (f" (the trace lists {listed} such GPUs, ops ran on {len(used)}: "
                    f"the node holds GPUs 0-{count - 1})" if count > 1 else
                    f" (the trace lists {listed} such GPUs, ops ran on GPU 0 only)")
        notes = machine.notes
        if listed > 1:  # a node of several GPUs: say what was assumed of the links between them, and how to do better
            said = links_assumed(hit.sheet.key, listed, option)
            if count > 1:
                notes = tuple(f"composed node: {said}" if n == NO_PEER_LINKS else n for n in notes)
            else:
                why += f"; {said}"
        return replace(machine, notes=(why, *notes))
    machine = load_machine(spec)
    return replace(machine, notes=machine.notes + tuple(check_gpu(machine, used, where, allow_mismatch, option,
                                                                  properties=properties)))


def linked_nodes(sheet_key: str, count: int) -> list[str]:
    """Catalogue nodes of at least ``count`` GPUs of data sheet ``sheet_key`` whose GPUs are linked to each other
    (NVLink, NVSwitch, Infinity Fabric): the nodes a trace of that many such GPUs may have run on, sorted.

    Each file is read as TOML first and loaded only when its ``[gpu]`` names that sheet and enough GPUs, so the
    scan stays cheap; a file that does not load is left out (naming it with ``--from`` shows its error).
    """
    out = []
    for path in sorted(catalogue_dir().glob("*.toml")):
        try:
            gpu = tomllib.loads(path.read_text(encoding="utf-8")).get("gpu")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if not isinstance(gpu, Mapping) or gpu.get("sheet") != sheet_key or not isinstance(gpu.get("count"), int) \
                or gpu["count"] < count:
            continue
        try:
            node = load_machine_file(path)
        except InputError:
            continue
        cpus = {f"cpu{i}" for i in range(node.cpu.sockets)}
        if any(link.kind in ("nvlink", "xgmi") and not cpus & set(link.endpoints) for link in node.links):
            out.append(node.name)
    return out


def links_assumed(sheet_key: str, listed: int, option: str = "--from") -> str:
    """What a node composed from a trace that lists ``listed`` GPUs of sheet ``sheet_key`` assumes of the links
    between them (none: traces record no topology), and the ``option`` that names the node when the user knows it:
    the catalogue's nodes of such GPUs (``linked_nodes``), else a machine file."""
    said = (f"the trace records nothing of the links between its {listed} GPUs: none assumed (peer copies and "
            "collectives route through the host)")
    known = linked_nodes(sheet_key, listed)
    if known:
        more = f" (or {', '.join(known[1:])})" if len(known) > 1 else ""
        return f"{said}; if they were linked, name the node: {option} {known[0]}{more}, or give a machine file"
    return (f"{said}; if they were linked (NVLink, NVSwitch, Infinity Fabric), give the node's machine file with "
            f"{option} (nodecast machines template writes one)")


def check_gpu(machine: Machine, names: Mapping[int, str], where: str | None = None,
              allow_mismatch: bool = False, option: str = "--from",
              properties: Mapping[int, GpuProperties] | None = None) -> list[str]:
    """Notes from checking ``machine``'s GPU against the trace's GPU ``names``; InputError on a mismatch.

    A generically named GPU is compared through the sheet its recorded ``properties`` pick, when they pick one.
    """
    if not names:
        return [f"the trace records no GPU name: {option} {machine.name} not checked against it"]
    mine = machine_sheet(machine)
    notes = []
    for name in dict.fromkeys(names.values()):
        hit = unambiguous_match(name)
        props = _recorded(name, names, properties or {}) if hit is None and is_generic_gpu_name(name) else None
        if props is not None:
            hit = match_by_properties(props)[0]
        theirs = None if hit is None else hit.sheet
        if theirs is not None and mine is not None:
            if theirs.key == mine.key:
                continue
            if same_gpu(theirs, mine):
                notes.append(f"the trace's GPU {name!r} (data sheet {theirs.key}) and {machine.name}'s "
                             f"(data sheet {mine.key}) have the same target, SMs, clock and DRAM bandwidth: "
                             "treated as the same GPU")
                continue
        elif normalise_gpu_name(name) in {normalise_gpu_name(n) for n in
                                          (machine.gpu.model, *(mine.device_names if mine else ()))}:
            continue
        else:
            missing = f"the trace's GPU {name!r}" if theirs is None else f"{machine.name}'s GPU {machine.gpu.model!r}"
            notes.append(f"{missing} has no data sheet: {option} {machine.name} not checked against the trace")
            continue
        yours = f"{machine.name}'s GPU {machine.gpu.model!r} (data sheet {mine.key})"
        if allow_mismatch:
            notes.append(Note(f"GPU mismatch allowed: the trace ran on {name!r} (data sheet {theirs.key}), "
                              f"projected as if it ran on {yours}", GPU_MISMATCH))
            continue
        raise InputError(f"the trace ran on {name!r} (data sheet {theirs.key}), not on {option} {yours}",
                         path=where, key=option,
                         hint=f"Give the node it ran on (e.g. {option} {theirs.key}), omit {option} to compose one "
                              "from the trace's GPU, or pass --allow-gpu-mismatch to project anyway")
    return notes
