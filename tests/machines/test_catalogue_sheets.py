"""One GPU, one set of values: each catalogue node's GPU is the node composed from its data sheet (issue 18).

A catalogue node names its GPU's data sheet (``[gpu] sheet = KEY``); values it gives itself override the
sheet's. Where a node repeated a sheet value, or contradicted it, the better-sourced value lives in the sheet
and the node gives none, so that ``h200-node`` and ``h200-sxm-141gb`` (``load_machine`` of the key) describe the
same GPU. A node keeps an override only where it genuinely differs from the sheet's product, said in a comment
beside the value and listed in ``EXCEPTIONS`` with the reason.

The GPU's ``model`` is not compared: it is the node's label for its GPU (``A100-40GB`` on the Euro-Par A100-40
server, whose paper leaves the form factor open), not a value any model computes with.
"""

from __future__ import annotations

import pytest

from nodecast.machines import catalogue_names, load_machine
from nodecast.machines.loader import catalogue_dir
from nodecast.machines.parts import TENSOR_PEAKS

#: node -> {field: why the node's value is not its sheet's}. Fields as ``gpu_values`` names them.
EXCEPTIONS: dict[str, dict[str, str]] = {
    "titan": {"levels.dram.bandwidth_bps": "AHEAD section VI-B gives Titan's GPU memory as '250 GB/s', the figure "
                                           "its D2D model used; the K20X sheet has the driver's exact 249.6e9"},
}


def gpu_values(machine) -> dict[str, object]:  # noqa: ANN001
    """Every GPU value a model may use, by name: counts, clocks, memory, peaks (vector and tensor), levels."""
    g = machine.gpu
    out: dict[str, object] = {"sms": g.sms, "clock_hz": g.clock_hz, "memory_bytes": g.memory_bytes,
                              "copy_engines": g.copy_engines, "max_concurrent_kernels": g.max_concurrent_kernels,
                              "sheet": None if g.sheet is None else g.sheet.key}
    for p, v in g.peak_flops.items():
        out[f"peak_flops.{p}"] = (v.fma, v.addmul)
    for k in TENSOR_PEAKS:
        out[f"peak_flops.{k}"] = g.peak_flops_per_s(k)
    for lv, v in g.levels.items():
        out[f"levels.{lv}.bandwidth_bps"] = v.bandwidth_bps
        out[f"levels.{lv}.size_bytes"] = v.size_bytes
    return out


@pytest.mark.parametrize("name", catalogue_names())
def test_node_gpu_equals_the_node_composed_from_its_sheet(name):
    """Every GPU value of the catalogue node equals that of ``load_machine(its sheet key)``, the listed exceptions
    apart (which must still differ, each with a comment in the node's file)."""
    node = load_machine(name)
    assert node.gpu.sheet is not None, f"{name} names no data sheet"
    composed = load_machine(node.gpu.sheet.key)
    mine, theirs = gpu_values(node), gpu_values(composed)
    allowed = EXCEPTIONS.get(name, {})
    differ = {k: (mine.get(k), theirs.get(k)) for k in sorted(set(mine) | set(theirs))
              if mine.get(k) != theirs.get(k) and k not in allowed}
    assert not differ, f"{name} differs from {node.gpu.sheet.key}: {differ}"
    for key in allowed:
        assert mine.get(key) != theirs.get(key), f"{name}: exception {key} no longer differs; drop it"
        assert node.provenance[f"gpu.{key}"].startswith("machine file"), key


def test_nodes_give_no_gpu_value_their_sheet_gives_alike():
    """No node repeats a sheet value: what a node's [gpu] table gives itself is its count, placement, label and the
    listed exceptions."""
    own = {"gpu.sheet", "gpu.model", "gpu.count", "gpu.cpu_socket"}
    for name in catalogue_names():
        node = load_machine(name)
        given = {k for k, v in node.provenance.items() if k.startswith("gpu.") and v.startswith("machine file")}
        extra = given - own - {f"gpu.{k}" for k in EXCEPTIONS.get(name, {})}
        assert not extra, f"{name} gives {sorted(extra)} itself; its sheet {node.gpu.sheet.key} should"
        text = (catalogue_dir() / f"{name}.toml").read_text()
        assert "[gpu.peak_flops" not in text, name
