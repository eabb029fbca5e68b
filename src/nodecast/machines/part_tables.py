"""A data sheet's and a host's values as a machine file's ``[gpu]`` / ``[cpu]`` tables, and a file's own values
laid over them, with where each value comes from.

A machine file's ``[gpu] sheet = "KEY"`` / ``[cpu] host = "KEY"`` fills the values the file does not give from the
data sheet / host file (``nodecast.machines.loader``); a node composed from a spec string is such a file without the
file (``nodecast.machines.compose``). Both use the tables and the merge here. Provenance labels are what
``Machine.provenance`` holds: ``machine file``, ``data sheet KEY``, ``host KEY``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from nodecast.machines.parts import GpuSheet, Host
from nodecast.machines.schema import PRECISIONS

#: The provenance of a value the machine file gives itself.
MACHINE_FILE = "machine file"


def sheet_label(sheet: GpuSheet) -> str:
    return f"data sheet {sheet.key}"


def host_label(host: Host, assumed: bool = False) -> str:
    return f"host {host.key}" + (" (assumed)" if assumed else "")


def sheet_gpu_table(sheet: GpuSheet) -> dict[str, Any]:
    """The sheet's values in a machine file's ``[gpu]`` vocabulary (without ``count``/``cpu_socket``).

    ``clock_hz`` is the boost clock (the clock the peaks are given at); each
    vector peak becomes ``{fma, addmul = fma / 2}`` (an ADD or MUL is one FLOP,
    an FMA two: the roofline paper's eq. 2 terms); ``levels`` holds the DRAM and
    whatever L2/L1/shared bandwidths and sizes the sheet gives.
    """
    levels: dict[str, Any] = {"dram": {"bandwidth_bps": sheet.dram_bandwidth_bps, "size_bytes": sheet.memory_bytes}}
    for level, bandwidth, size in (("l2", sheet.l2_bandwidth_bps, sheet.l2_bytes), ("l1", sheet.l1_bandwidth_bps, None),
                                   ("shared", sheet.shared_bandwidth_bps, None)):
        entry = {k: v for k, v in (("bandwidth_bps", bandwidth), ("size_bytes", size)) if v is not None}
        if entry:
            levels[level] = entry
    table = {
        "model": sheet.name,
        "sms": sheet.sms,
        "clock_hz": sheet.boost_clock_hz,
        "memory_bytes": sheet.memory_bytes,
        "peak_flops": {p: {"fma": v, "addmul": v / 2} for p in PRECISIONS if (v := sheet.peak(p)) is not None},
        "levels": levels,
    }
    for key in ("copy_engines", "max_concurrent_kernels"):  # where the sheet gives them
        if (value := getattr(sheet, key)) is not None:
            table[key] = value
    return table


def host_cpu_table(host: Host) -> dict[str, Any]:
    """The host's values in a machine file's ``[cpu]`` vocabulary."""
    c = host.cpu
    table = {"model": c.model, "sockets": c.sockets, "cores_per_socket": c.cores_per_socket, "clock_hz": c.clock_hz,
             "memory_bytes": c.memory_bytes, "memory_bandwidth_bps": c.memory_bandwidth_bps,
             "numa_domains": c.numa_domains}
    if c.copy_bandwidth_bps is not None:
        table["copy_bandwidth_bps"] = c.copy_bandwidth_bps
    return table


def _leaves(table: dict[str, Any], prefix: str, atomic: tuple[str, ...]) -> dict[str, Any]:
    """Dotted path -> value; the children of a table whose path is in ``atomic`` count as leaves whole."""
    out = {}
    for k, v in table.items():
        path = f"{prefix}.{k}"
        if isinstance(v, dict) and prefix not in atomic:
            out.update(_leaves(v, path, atomic))
        else:
            out[path] = v
    return out


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                      and all(_same(a[k], b[k]) for k in a))


def merge(base: dict[str, Any], own: dict[str, Any], prefix: str, base_label: str,
          atomic: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """``own`` laid over ``base`` leaf by leaf, and each leaf's provenance.

    ``own`` values are labelled ``machine file`` (with the base's value in
    brackets where they differ from it); the rest ``base_label``.
    """
    merged = copy.deepcopy(base)
    for k, v in own.items():
        if isinstance(v, dict) and isinstance(merged.get(k), dict) and prefix not in atomic:
            merged[k], _ = merge(merged[k], v, f"{prefix}.{k}", base_label, atomic)
        else:
            merged[k] = copy.deepcopy(v)
    ours, theirs = _leaves(own, prefix, atomic), _leaves(base, prefix, atomic)
    provenance = {}
    for path in sorted(_leaves(merged, prefix, atomic)):
        if path not in ours:
            provenance[path] = base_label
        elif path in theirs and not _same(ours[path], theirs[path]):
            provenance[path] = f"{MACHINE_FILE} ({base_label}: {_short(theirs[path], path)})"
        else:
            provenance[path] = MACHINE_FILE
    return merged, provenance


def _short(value: Any, path: str = "") -> str:
    """The base's value of ``path`` as the provenance names it: with the unit its key's suffix says (``_bps``,
    ``_bytes``, ``_hz``, ``_s``, a peak's flop/s), never an exponent (``249.6 GB/s``, not ``2.496e+11``); four
    significant digits, so that it shows how it differs from the value the machine file gives."""
    from nodecast.units import fmt_bytes, fmt_seconds, significant

    if isinstance(value, dict):
        return ", ".join(f"{k} {_short(v, f'{path}.{k}')}" for k, v in value.items())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    v = float(value)
    if path.endswith("_bps"):
        return f"{significant(v / 1e9, 4)} GB/s"
    if path.endswith("_bytes"):
        return fmt_bytes(v)
    if path.endswith("_hz"):
        return f"{significant(v / 1e9, 4)} GHz"
    if path.endswith("_s"):
        return fmt_seconds(v)
    if ".peak_flops." in path:
        return f"{significant(v / 1e9, 4)} GFlop/s"
    return f"{value:,}" if isinstance(value, int) else significant(v, 4)


#: A peak precision is one unit: a machine file giving ``[gpu.peak_flops.fp32]`` gives both its terms.
GPU_ATOMIC = ("gpu.peak_flops",)


def resolve_file_reference(text: str, machine_path: Path | str) -> str:
    """A ``sheet``/``host`` value: a key as is; a ``.toml`` path relative to the machine file's folder."""
    if text.endswith(".toml"):
        p = Path(text)
        return str(p if p.is_absolute() else Path(machine_path).parent / p)
    return text
