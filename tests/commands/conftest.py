"""Fixtures shared by the command tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodecast.models.roofline_figures import measured_gpu_toml


def write_machine(folder: Path, name: str, gpu: str, fp32: float, dram: float, *, fp64: float | None = None,
                  measured: bool = True, l2: float | None = None) -> Path:
    """Data-sheet FP32 (and optionally FP64) peaks, DRAM bandwidth, optionally Table 1's [measured.gpu]."""
    text = f"""schema_version = 1
name = "{name}"
description = "test machine {name}"
[cpu]
model = "test cpu"
sockets = 1
cores_per_socket = 4
clock_hz = 2e9
memory_bytes = 1e10
memory_bandwidth_bps = 1e11
[gpu]
model = "{gpu}"
count = 1
sms = 80
clock_hz = 1.53e9
memory_bytes = 1.6e10
"""
    if fp64 is not None:
        text += f"[gpu.peak_flops.fp64]\nfma = {fp64}\naddmul = {fp64 / 2}\n"
    text += f"""[gpu.peak_flops.fp32]
fma = {fp32}
addmul = {fp32 / 2}
[gpu.peak_flops.fp16]
fma = {2 * fp32}
addmul = {fp32}
[gpu.levels.dram]
bandwidth_bps = {dram}
"""
    if l2 is not None:
        text += f"[gpu.levels.l2]\nbandwidth_bps = {l2}\n"
    text += '[[links]]\nid = "p"\nkind = "pcie"\nendpoints = ["cpu0", "gpu0"]\ngen = 3\nlanes = 16\n'
    if measured:
        text += measured_gpu_toml(gpu) + "\n"
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.fixture
def machine_writer():
    """``write_machine(folder, name, gpu, fp32, dram, *, fp64=None, measured=True, l2=None)`` -> TOML path."""
    return write_machine
